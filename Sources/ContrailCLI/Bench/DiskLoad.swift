import ContrailSupport
import Foundation
import Synchronization

/// Another thread loading the disk while a benchmark runs: it writes 1 MiB to a scratch file and
/// `fsync`s it, over and over, until `stop()`. `syncs` says how much it did (a bench checks it is
/// not zero, so the load really ran).
///
/// `@unchecked Sendable` invariant: `thread` is set once in `init` and read only by `stop()` on the
/// starting thread; the threads share only the atomics `stopping`, `finished` and `syncs`.
final class DiskLoad: @unchecked Sendable {
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    /// The number of 1 MiB writes synced so far.
    let syncs = Atomic<Int>(0)
    private let url: URL

    /// Starts the thread, writing to a new file at `url` (removed by `stop()`).
    init(url: URL) {
        self.url = url
        Thread.named("disk-load") { [self] in run() }.start()
    }

    /// Stops the thread and waits (bounded: 10 s) for it to finish its current write and sync.
    func stop() {
        stopping.store(true, ordering: .releasing)
        let deadline = ContinuousClock.now + .seconds(10)
        while !finished.load(ordering: .acquiring) && ContinuousClock.now < deadline { usleep(1_000) }
        try? FileManager.default.removeItem(at: url)
    }

    private func run() {
        defer { finished.store(true, ordering: .releasing) }
        let fd = open(url.path(percentEncoded: false), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        var round = 0
        while !stopping.load(ordering: .acquiring) {
            let written = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t((round % 64) << 20)) }
            guard written == chunk.count, fsync(fd) == 0 else { return }
            round += 1
            syncs.add(1, ordering: .relaxed)
        }
    }
}
