import ContrailSupport
import ContrailWire
import Foundation

/// The one thread of a server that touches scope log files: opens (and replays) them, appends
/// change sets, syncs, compacts and closes, so no scope actor ever blocks the cooperative pool on
/// the disk.
///
/// Group commit: the thread takes every job queued since its last pass, writes all their records
/// (appends only fill each log's buffer: one `write` per log and pass), then syncs each log
/// written to once (``FsyncPolicy/everyRecord``), and only then runs the jobs' completions in
/// submission order. So a change set is acknowledged only once its record is on disk, and a burst
/// of change sets from many sessions shares one `write` and one `fdatasync` per log. The
/// completions of a pass run in one ``DeliveryBatch``: the replies they release go out when the
/// last has run, written on this thread, one frame per session. With ``FsyncPolicy/interval(_:)``
/// (the explicit buffered opt-in) completions run once the records are written to the OS, and
/// each log is synced at most once per interval (also when idle); with ``FsyncPolicy/never`` it
/// is never synced.
///
/// `@unchecked Sendable` invariant: `jobs` and `isFinished` are only touched under `condition`;
/// `threadID` is written once by the writer thread before it takes any job and read only by
/// that thread (``isCurrentThread``, asserted by every ``ScopePersistence`` method).
final class ScopeLogWriter: @unchecked Sendable {
    /// One unit of work, run on the writer thread in submission order.
    private enum Job {
        case open(URL, name: String, root: UUID, done: @Sendable (Result<ScopePersistence.Opened, ServerError>) -> Void)
        case append(ScopePersistence, [UInt8], submitted: UInt64, done: @Sendable (ServerError?) -> Void)
        case after(@Sendable () -> Void)
        case compact(ScopePersistence, [UInt8], sequence: Int)
        case close(ScopePersistence, done: @Sendable () -> Void)
        case perform(@Sendable (_ onWriter: Bool) -> Void)
    }

    /// A completion waiting for the group's sync.
    private enum Waiting {
        case append(ScopePersistence, submitted: UInt64, done: @Sendable (ServerError?) -> Void)
        case failed(ServerError, done: @Sendable (ServerError?) -> Void)
        case after(@Sendable () -> Void)
    }

    /// How a server with a history retention keeps history segments (``HistoryFiles``).
    struct HistoryKeeping: Sendable {
        /// How long a segment stays after the compaction that closed it, in seconds.
        let retentionSeconds: Double
        /// The wall clock segments are stamped and trimmed by.
        let now: @Sendable () -> Date
    }

    /// When records are forced to disk.
    let policy: FsyncPolicy
    /// Set when compactions keep the logs they replace as history segments; nil: the history is
    /// what each log holds.
    let history: HistoryKeeping?
    private let log: ServerLog
    /// Where each sync and each append's wait for durability are observed.
    private let metrics: ServerMetrics
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var isFinished = false
    private var threadID: pthread_t?
    /// Logs written since their last sync (writer thread only).
    private var unsynced: [ObjectIdentifier: ScopePersistence] = [:]

    /// Starts the writer thread.
    init(policy: FsyncPolicy, log: ServerLog, metrics: ServerMetrics = ServerMetrics(), history: HistoryKeeping? = nil) {
        self.policy = policy
        self.history = history
        self.log = log
        self.metrics = metrics
        Thread.named("scope-log") { [self] in run() }.start()
    }

    /// Whether the caller is this writer's thread.
    var isCurrentThread: Bool {
        threadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    // MARK: Submitting (any thread)

    /// Opens (or creates) scope `name`'s log in `directory` and replays it, on the writer thread.
    /// A new log's fresh scope gets `root` as its root's UUID.
    func open(directory: URL, name: String, root: UUID = UUID()) async throws(ServerError) -> ScopePersistence.Opened {
        // The store built on the writer thread crosses to the scope through a lock ThreadSanitizer
        // sees: a continuation resumed before its task suspends orders nothing it can see, and the
        // scope then changes the store's buffers in place.
        let handOff = OpenedHandOff()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            submit(.open(directory, name: name, root: root, done: { result in
                handOff.result.withLock { $0 = result }
                continuation.resume()
            }))
        }
        guard let result = handOff.result.withLock({ $0 }) else { throw .persistence(scope: name, reason: "the log writer ended without opening it") }
        return try result.get()
    }

    /// What ``open(directory:name:root:)`` receives from the writer thread.
    private final class OpenedHandOff: Sendable {
        let result = SanitizerVisibleMutex<Result<ScopePersistence.Opened, ServerError>?>(nil)
    }

    /// Appends a change-set record; `done` runs on the writer thread once it is durable under the
    /// policy (nil) or failed.
    func append(_ persistence: ScopePersistence, _ payload: [UInt8], done: @escaping @Sendable (ServerError?) -> Void) {
        submit(.append(persistence, payload, submitted: ServerMetrics.now(), done: done))
    }

    /// Runs `body` on the writer thread after every earlier append's completion.
    func after(_ body: @escaping @Sendable () -> Void) {
        submit(.after(body))
    }

    /// Replaces `persistence`'s log with `snapshot`, the state after change set `sequence` (after
    /// the earlier appends).
    func compact(_ persistence: ScopePersistence, snapshot: [UInt8], sequence: Int) {
        submit(.compact(persistence, snapshot, sequence: sequence))
    }

    /// Syncs (unless the policy is ``FsyncPolicy/never``) and closes `persistence`'s log after the
    /// earlier jobs; returns when it is closed.
    func close(_ persistence: ScopePersistence) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            submit(.close(persistence, done: { continuation.resume() }))
        }
    }

    /// Runs `body` on the writer thread once every earlier job is done and its records are
    /// durable under the policy (their completions have run), and returns its result. `body` may
    /// use any ``ScopePersistence`` of this writer. Once the writer has finished, `body` runs on
    /// the caller's task instead with `false` (it must not touch a log then).
    func perform<T: Sendable>(_ body: @escaping @Sendable (_ onWriter: Bool) -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            submit(.perform { onWriter in continuation.resume(returning: body(onWriter)) })
        }
    }

    /// Lets the thread end once the jobs queued so far are done. Later submissions fail.
    func finish() {
        condition.lock()
        isFinished = true
        condition.signal()
        condition.unlock()
    }

    private func submit(_ job: Job) {
        condition.lock()
        if isFinished {
            condition.unlock()
            fail(job)
            return
        }
        jobs.append(job)
        if jobs.count == 1 { condition.signal() }
        condition.unlock()
    }

    private func fail(_ job: Job) {
        switch job {
        case .open(_, _, _, let done): done(.failure(.stopped))
        case .append(_, _, _, let done): done(.stopped)
        case .after(let body): body()
        case .compact: break
        case .close(_, let done): done()
        case .perform(let body): body(false)
        }
    }

    // MARK: The writer thread

    private func run() {
        threadID = pthread_self()
        while let batch = nextBatch() {
            var waiting: [Waiting] = []
            for job in batch {
                switch job {
                case .open(let directory, let name, let root, let done):
                    done(Result { () throws(ServerError) in
                        try ScopePersistence.open(directory: directory, name: name, root: root, log: log, writer: self)
                    })
                case .append(let persistence, let payload, let submitted, let done):
                    do {
                        try persistence.write(payload)
                        unsynced[ObjectIdentifier(persistence)] = persistence
                        waiting.append(.append(persistence, submitted: submitted, done: done))
                    } catch {
                        waiting.append(.failed(error, done: done))
                    }
                case .after(let body):
                    waiting.append(.after(body))
                case .compact(let persistence, let snapshot, let sequence):
                    commit(&waiting)
                    do {
                        try persistence.compact(snapshot: snapshot, sequence: sequence)
                        unsynced[ObjectIdentifier(persistence)] = nil
                    } catch {
                        log.write("scope.error", level: .error, scope: persistence.name, "scope '\(persistence.name)': compaction failed, keeping the log: \(error)")
                    }
                case .perform(let body):
                    commit(&waiting)
                    body(true)
                case .close(let persistence, let done):
                    commit(&waiting)
                    unsynced[ObjectIdentifier(persistence)] = nil
                    persistence.close(sync: policy != .never)
                    done()
                }
            }
            commit(&waiting)
        }
        for persistence in unsynced.values where policy != .never { try? persistence.sync() }
    }

    /// Waits for jobs and takes them all; nil once finished and drained. Under the interval policy
    /// it wakes when a sync is due and syncs idle logs.
    private func nextBatch() -> [Job]? {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty {
            if isFinished { return nil }
            if case .interval(let interval) = policy, !unsynced.isEmpty {
                if !condition.wait(until: Date(timeIntervalSinceNow: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)) {
                    condition.unlock()
                    syncDue()
                    condition.lock()
                }
            } else {
                condition.wait()
            }
        }
        defer { jobs.removeAll(keepingCapacity: true) }
        return jobs
    }

    /// Writes out the records appended since the last commit (one `write` per log: an append only
    /// buffers its record) and syncs what the policy asks for, then runs the waiting completions in
    /// order: an append's with its log's write or sync error, if any.
    private func commit(_ waiting: inout [Waiting]) {
        guard !waiting.isEmpty else { return }
        var failures: [ObjectIdentifier: ServerError] = [:]
        switch policy {
        case .everyRecord:
            for (id, persistence) in unsynced {
                do { try timedSync(persistence) } catch { failures[id] = error }  // a sync writes out the buffer first
            }
            unsynced.removeAll(keepingCapacity: true)
        case .interval:
            flushUnsynced(&failures)
            syncDue()
        case .never:
            flushUnsynced(&failures)
            unsynced.removeAll(keepingCapacity: true)
        }
        // The completions release held replies (``HeldReply``): their outboxes' writers are woken
        // once, after the last completion, and write on this thread while their sockets take the
        // frames without waiting (one frame per session and commit, no task and no thread hop).
        let batch = DeliveryBatch()
        batch.runHere {
            for item in waiting {
                switch item {
                case .append(let persistence, let submitted, let done):
                    ServerMetrics.observe(metrics.groupCommit, since: submitted)
                    done(failures[ObjectIdentifier(persistence)])
                case .failed(let error, let done): done(error)
                case .after(let body): body()
                }
            }
        }
        batch.flush()
        waiting.removeAll(keepingCapacity: true)
    }

    /// Writes out the buffered records of every log written since its last sync, noting failures.
    private func flushUnsynced(_ failures: inout [ObjectIdentifier: ServerError]) {
        for (id, persistence) in unsynced {
            do { try persistence.flush() } catch { failures[id] = error }
        }
    }

    /// Syncs `persistence`'s log, observing the sync's duration.
    private func timedSync(_ persistence: ScopePersistence) throws(ServerError) {
        let started = ServerMetrics.now()
        defer { ServerMetrics.observe(metrics.fsync, since: started) }
        try persistence.sync()
    }

    /// Under the interval policy, syncs every log whose last sync is an interval old.
    private func syncDue() {
        guard case .interval(let interval) = policy else { return }
        for (id, persistence) in unsynced where persistence.timeSinceSync >= interval {
            do { try timedSync(persistence) } catch { log.write("scope.error", level: .error, scope: persistence.name, "scope '\(persistence.name)': \(error)") }
            unsynced[id] = nil
        }
    }
}
