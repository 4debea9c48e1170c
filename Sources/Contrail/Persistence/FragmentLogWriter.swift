import ContrailSupport
import ContrailWire
import Foundation
import Synchronization

/// A ``FragmentLog``'s file: records are appended on the calling thread, the slow disk work
/// (sync, compaction) happens on the log's own writer thread, so the main actor never waits on
/// the disk.
///
/// `append` encodes the record and writes it with one `write(2)` before it returns (a record
/// larger than the 64 KiB append buffer takes two): from then on the record is in the operating
/// system's page cache, and a crash of the app (even a SIGKILL) loses nothing. Power-loss
/// durability is the writer thread's: it takes everything queued at once and syncs once for the
/// whole batch (group commit), so under ``FsyncPolicy/everyRecord`` a record is durable a few
/// hundred microseconds after `modify` returned. Every append and job gets a ticket;
/// `durableTicket` is the last ticket known to be on disk, and `waitUntilDurable` waits for it.
///
/// `@unchecked Sendable` invariant: `scratch` is touched only under `encodingLock`; `file` and
/// `generation` only under `fileLock`
/// (the calling thread appends, the writer thread syncs and compacts; `fdatasync` itself runs
/// outside the lock on a `LogFile.SyncPoint`); `needsIntervalSync` only by the writer thread;
/// everything else the threads share is in `shared`, guarded by `condition`'s lock; `size` and
/// `writtenTicket` are atomics.
final class FragmentLogWriter: @unchecked Sendable {
    /// Bytes after the synced end whose pages the writer thread brings into the cache after each sync
    /// (a sync takes milliseconds under load: the appends meanwhile must find theirs cached too).
    static let prefetchLength = LogFile.appendPreallocation

    /// One piece of queued work.
    enum Job: Sendable {
        /// A record was appended (on the calling thread): sync it by the policy.
        case written
        /// Replace the file with a snapshot record followed by `tail` (pending change sets) and
        /// the records appended since `position` (where the file ended when the snapshot was taken).
        case compact(snapshot: FragmentLogEntry, tail: [FragmentLogEntry], position: Position)
        /// Sync now, whatever the policy (for `waitUntilDurable`).
        case sync
    }

    /// Where the file ended, and in which generation (a compaction starts a new one).
    struct Position: Sendable {
        var generation: Int
        var offset: Int
    }

    private struct Shared {
        var jobs: [Job] = []
        var lastTicket = 0
        var durableTicket = 0
        var waiters: [(ticket: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var isClosing = false
        var isFinished = false
        /// Whether the writer thread sleeps on the condition (only then does a submit wake it).
        var isWaiting = false
        var closeError: LogFileError?
    }

    private let condition = NSCondition()
    private var shared = Shared()
    /// Guards `file` and `generation`: appends on the calling thread, syncs and compactions on the writer.
    private let fileLock = NSLock()
    /// Guards `scratch`: held while a record is encoded, outside `fileLock`, so the writer thread
    /// never waits for an encoding (only appending threads take it).
    private let encodingLock = NSLock()
    /// The buffer each appended record is encoded into, reused (no allocation per record).
    private var scratch = JSONWriter(sortedKeys: false, capacity: 4 << 10)
    private let file: LogFile
    /// Counts compactions installed (guarded by `fileLock`).
    private var generation = 0
    private let url: URL
    private let policy: FsyncPolicy
    private let onError: @Sendable (FragmentLogError) -> Void
    private var needsIntervalSync = false
    private var thread: Thread?
    /// The file's size after the last append or batch (for the compaction threshold).
    let size = Atomic<Int>(0)
    /// The last ticket whose job has been carried out (written, not necessarily synced).
    let writtenTicket = Atomic<Int>(0)

    /// Starts the writer thread for `file`, which must have been opened with ``FsyncPolicy/never``
    /// (the writer syncs by `policy` itself: ``FsyncPolicy/interval(_:)`` syncs at most once per
    /// interval and also when appends stop). `onError` is called on the writer thread.
    init(file: LogFile, policy: FsyncPolicy, onError: @escaping @Sendable (FragmentLogError) -> Void) {
        self.file = file
        self.url = file.url
        self.policy = policy
        self.onError = onError
        size.store(file.size, ordering: .relaxed)
        let thread = Thread.named("fragment-log") { [self] in run() }
        self.thread = thread
        thread.start()
    }

    /// Encodes `entry` and writes it to the file on the calling thread (in the OS's hands when
    /// this returns), then queues a sync for the writer thread. Never waits for the disk.
    /// O(size of the entry). Throws if the write failed; nothing of the record is kept then.
    @discardableResult
    func append(_ entry: FragmentLogEntry) throws(FragmentLogError) -> Int {
        encodingLock.lock()
        defer { encodingLock.unlock() }
        scratch.removeAll()
        entry.encode(into: &scratch)
        fileLock.lock()
        do throws(LogFileError) {
            try scratch.withUnsafeBytes { (payload) throws(LogFileError) in
                try file.append(kind: entry.kind, bytes: payload)
                try file.flush()
            }
        } catch {
            fileLock.unlock()
            throw .file(error)
        }
        size.store(file.size, ordering: .relaxed)
        fileLock.unlock()
        return submit(.written)
    }

    /// Where the file ends now (for a compaction's `position`).
    func position() -> Position {
        fileLock.lock()
        defer { fileLock.unlock() }
        return Position(generation: generation, offset: file.size)
    }

    /// Queues `job` and returns its ticket. Never waits for the disk.
    @discardableResult
    func submit(_ job: Job) -> Int {
        condition.lock()
        defer { condition.unlock() }
        shared.jobs.append(job)
        shared.lastTicket += 1
        if shared.isWaiting { condition.signal() }  // a busy writer takes the job with its next batch
        return shared.lastTicket
    }

    /// Returns once everything submitted so far is synced to disk; throws the error that kept a
    /// batch from getting there.
    func waitUntilDurable() async throws(FragmentLogError) {
        let ticket = submit(.sync)
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                condition.lock()
                defer { condition.unlock() }
                if shared.durableTicket >= ticket || shared.isFinished {
                    continuation.resume()
                } else {
                    shared.waiters.append((ticket, continuation))
                }
            }
        } catch let error as FragmentLogError {
            throw error
        } catch {
            throw .file(.unusable(path: url.path, reason: "\(error)"))
        }
    }

    /// Tells the writer thread to sync what was appended (unless the policy is
    /// ``FsyncPolicy/never``), close the file and end, without waiting for it.
    func finish() {
        condition.lock()
        shared.isClosing = true
        condition.broadcast()
        condition.unlock()
    }

    /// `finish()`, then waits for the writer thread to end: the one call that blocks (use it at shutdown).
    func close() throws(FragmentLogError) {
        finish()
        condition.lock()
        while !shared.isFinished { condition.wait() }
        let error = shared.closeError
        condition.unlock()
        if let error { throw .file(error) }
    }

    // MARK: - Writer thread

    private func run() {
        assert(Thread.current === thread, "the writer loop runs on its own thread")
        // Woken by every append: its wake-ups must not preempt the appending (main) thread.
        Platform.yieldOnWakeUp()
        let interval: Duration? = if case .interval(let duration) = policy { duration } else { nil }
        var lastSync = ContinuousClock.now
        while true {
            condition.lock()
            shared.isWaiting = true
            while shared.jobs.isEmpty && !shared.isClosing {
                if let interval, needsIntervalSync {
                    let due = lastSync + interval
                    if ContinuousClock.now >= due || !condition.wait(until: Date(timeIntervalSinceNow: (due - ContinuousClock.now).seconds)) { break }
                } else {
                    condition.wait()
                }
            }
            shared.isWaiting = false
            let batch = shared.jobs
            shared.jobs.removeAll(keepingCapacity: true)
            let last = shared.lastTicket
            let closing = shared.isClosing
            condition.unlock()

            var failure: FragmentLogError?
            var forceSync = closing && policy != .never
            var wrote = false
            for job in batch {
                switch job {
                case .written: wrote = true
                case .sync: forceSync = true
                case .compact(let snapshot, let tail, let position):
                    do throws(LogFileError) { try compact(snapshot: snapshot, tail: tail, position: position) } catch {
                        failure = .file(error)
                        onError(.file(error))
                    }
                }
            }
            // Group commit: one sync for the whole batch.
            var synced = false
            do throws(LogFileError) {
                let due = interval.map { ContinuousClock.now - lastSync >= $0 } ?? false
                if forceSync || (policy == .everyRecord && wrote) || (due && (wrote || needsIntervalSync)) {
                    try syncFile()
                    if closing {  // the sync marker the first one is owed, written and synced: the file is left fully marked
                        fileLock.lock()
                        file.writePendingSyncMarker()
                        fileLock.unlock()
                        try syncFile()
                    }
                    synced = true
                    lastSync = .now
                }
                needsIntervalSync = interval != nil && !synced && (wrote || needsIntervalSync)
            } catch {
                failure = failure ?? .file(error)
                onError(.file(error))
            }
            writtenTicket.store(last, ordering: .releasing)

            condition.lock()
            if synced || failure != nil { shared.durableTicket = max(shared.durableTicket, last) }
            var ready: [CheckedContinuation<Void, any Error>] = []
            let durable = shared.durableTicket
            shared.waiters.removeAll { waiter in
                guard waiter.ticket <= durable || closing else { return false }
                ready.append(waiter.continuation)
                return true
            }
            if closing {
                fileLock.lock()
                do throws(LogFileError) { try file.close() } catch { shared.closeError = error }
                fileLock.unlock()
                shared.isFinished = true
                condition.broadcast()
            }
            condition.unlock()
            for continuation in ready {
                if let failure { continuation.resume(throwing: failure) } else { continuation.resume() }
            }
            if closing { return }
        }
    }

    /// Syncs everything appended so far without holding the file lock during `fdatasync`, so
    /// appends go on meanwhile.
    private func syncFile() throws(LogFileError) {
        fileLock.lock()
        let point: LogFile.SyncPoint
        do throws(LogFileError) { point = try file.syncPoint() } catch {
            fileLock.unlock()
            throw error
        }
        fileLock.unlock()
        var failure: LogFileError?
        do throws(LogFileError) { try LogFile.sync(point) } catch { failure = error }
        // The pages the next appends write to, cached now (here, not on the appending thread).
        LogFile.prefetch(after: point, length: Self.prefetchLength)
        fileLock.lock()
        file.didSync(point, error: failure)
        size.store(file.size, ordering: .relaxed)
        fileLock.unlock()
        if let failure { throw failure }
    }

    /// Writes and verifies the new generation without the file lock, then installs it under the
    /// lock, carrying over the records appended since `position`. A compaction queued against an
    /// older generation (another one ran first) is dropped: that one already replaced the file.
    private func compact(snapshot: FragmentLogEntry, tail: [FragmentLogEntry], position: Position) throws(LogFileError) {
        let prepared = try file.prepareCompaction(snapshot: snapshot.encoded(), keeping: tail.map { ($0.kind, $0.encoded()) })
        fileLock.lock()
        guard position.generation == generation else {
            fileLock.unlock()
            return
        }
        do throws(LogFileError) {
            try file.finishCompaction(prepared, carryingFrom: position.offset)
        } catch {
            fileLock.unlock()
            throw error
        }
        generation += 1
        size.store(file.size, ordering: .relaxed)
        fileLock.unlock()
        try LogFile.syncDirectory(of: url.path(percentEncoded: false))
    }
}
