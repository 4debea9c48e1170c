import Foundation
import Synchronization

/// The thread that does a ``FragmentLog``'s disk work, so the main actor never waits on the disk.
///
/// The main actor queues jobs (`submit`, O(1) under a short lock); the thread takes everything
/// queued at once, encodes and appends it, and then syncs once for the whole batch (group
/// commit): under ``FsyncPolicy/everyRecord`` a record is durable when the batch it went out in
/// has been synced, a few hundred microseconds after `modify` returned. Every job gets a ticket;
/// `durableTicket` is the last ticket known to be on disk, and `waitUntilDurable` waits for it.
///
/// `@unchecked Sendable` invariant: `file` and `needsIntervalSync` are used only by the writer
/// thread (and by `close` after the thread has finished); everything the threads share is in
/// `shared`, guarded by `condition`'s lock; `size` and `writtenTicket` are atomics.
final class FragmentLogWriter: @unchecked Sendable {
    /// One piece of queued work.
    enum Job: Sendable {
        /// Encode and append one record.
        case append(FragmentLogEntry)
        /// Replace the file with a snapshot record followed by `tail` (pending change sets).
        case compact(snapshot: FragmentLogEntry, tail: [FragmentLogEntry])
        /// Sync now, whatever the policy (for `waitUntilDurable`).
        case sync
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
    private let file: LogFile
    private let policy: FsyncPolicy
    private let onError: @Sendable (FragmentLogError) -> Void
    private var needsIntervalSync = false
    private var thread: Thread?
    /// The file's size after the last batch (for the compaction threshold).
    let size = Atomic<Int>(0)
    /// The last ticket whose job has been carried out (written, not necessarily synced).
    let writtenTicket = Atomic<Int>(0)

    /// Starts the writer thread for `file`, which must have been opened with ``FsyncPolicy/never``
    /// (the writer syncs by `policy` itself: ``FsyncPolicy/interval(_:)`` syncs at most once per
    /// interval and also when appends stop). `onError` is called on the writer thread.
    init(file: LogFile, policy: FsyncPolicy, onError: @escaping @Sendable (FragmentLogError) -> Void) {
        self.file = file
        self.policy = policy
        self.onError = onError
        size.store(file.size, ordering: .relaxed)
        let thread = Thread { [self] in run() }
        thread.name = "contrail.fragment-log"
        self.thread = thread
        thread.start()
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
            throw .file(.unusable(path: file.url.path, reason: "\(error)"))
        }
    }

    /// Tells the writer thread to write what is queued, sync (unless the policy is
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
            for job in batch {
                do throws(LogFileError) {
                    switch job {
                    case .append(let entry): _ = try file.append(entry.kind, entry.encoded())
                    case .compact(let snapshot, let tail):
                        try file.compact(snapshot: snapshot.encoded(), keeping: tail.map { ($0.kind, $0.encoded()) })
                    case .sync: forceSync = true
                    }
                } catch {
                    failure = .file(error)
                    onError(.file(error))
                }
            }
            // Group commit: one sync for the whole batch.
            var synced = false
            do throws(LogFileError) {
                let due = interval.map { ContinuousClock.now - lastSync >= $0 } ?? false
                if forceSync || policy == .everyRecord || due {
                    try file.sync()
                    synced = true
                    lastSync = .now
                } else if interval != nil {
                    try file.flush()
                }
                needsIntervalSync = interval != nil && !synced
            } catch {
                failure = failure ?? .file(error)
                onError(.file(error))
            }
            size.store(file.size, ordering: .relaxed)
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
                do throws(LogFileError) { try file.close() } catch { shared.closeError = error }
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
}
