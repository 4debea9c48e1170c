import ContrailSupport

/// Holds back the wake-ups of outbox writers while a connection's task handles frames that have
/// already arrived: whatever those frames deliver to any session (broadcasts, replies) is written
/// when the connection has no more input at hand, so each reader gets one frame, one `write`, for
/// the whole burst instead of one per change set. Nothing waits for a timer: the batch ends as soon
/// as the input does.
///
/// A task binds one with ``run(_:)``; ``OutboxWriter`` asks ``current`` when woken.
final class DeliveryBatch: Sendable {
    /// The batch of the task handling the frame being processed, if any.
    @TaskLocal static var current: DeliveryBatch?

    /// The most frames of one connection whose deliveries are held back together: a client that
    /// never pauses still has its changes delivered after this many.
    static let maxFrames = 64

    /// Whether a burst is being handled (from ``run(_:)`` until ``flush()``), and the wake-ups held
    /// back meanwhile, in order (each writer at most once per burst: an outbox wakes its writer only
    /// when its queue goes from empty to not empty).
    private let state = SanitizerVisibleMutex((open: false, held: [@Sendable () -> Void]()))

    init() {}

    /// Runs `body` with this batch as ``current``, holding wake-ups until the next ``flush()``.
    func run<T: Sendable>(_ body: () async -> T) async -> T {
        state.withLock { $0.open = true }
        return await Self.$current.withValue(self) { await body() }
    }

    /// ``run(_:)`` for synchronous work on any thread, a task's or not (the log writer's thread
    /// runs the completions of one group commit in a batch: the replies they release go out
    /// together, written on that thread).
    func runHere<T>(_ body: () -> T) -> T {
        state.withLock { $0.open = true }
        return Self.$current.withValue(self) { body() }
    }

    /// Holds `wake` back until ``flush()`` and returns true; returns false when no burst is being
    /// handled (a task that inherited the batch and runs later must not wait for the connection's
    /// next frame: its caller wakes at once).
    func hold(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state -> Bool in
            if state.open { state.held.append(wake) }
            return state.open
        }
    }

    /// Ends the burst: runs the wake-ups held back, in order, on the calling task and outside any
    /// lock (a writer may write its frames right there). O(wake-ups).
    func flush() {
        let wakes = state.withLock { state in
            state.open = false
            defer { state.held = [] }
            return state.held
        }
        for wake in wakes { wake() }
    }

    /// The number of wake-ups held back (for tests).
    var heldCount: Int { state.withLock { $0.held.count } }
}
