import ContrailSupport

/// Holds back the wake-ups of outbox writers while a connection's task handles frames that have
/// already arrived: whatever those frames deliver to any session (broadcasts, replies) is written
/// when the connection has no more input at hand, so each reader gets one frame, one `write`, for
/// the whole burst instead of one per change set. Nothing waits for a timer: the batch ends as soon
/// as the input does.
///
/// On a connection served on its event loop the batch ends later still, when the loop goes idle
/// (``endBurst(frames:loop:)``): frames that arrived while the burst was handled are read and
/// handled first, and join it. At most ``maxFrames`` frames are held back either way.
///
/// States: `closed` (wake-ups go through at once), `handling` (a burst is being handled: they are
/// held), `deferred` (the burst is over and its wake-ups wait for the loop to go idle, or for the
/// next burst to end).
///
/// A task binds one with ``run(_:)``; ``OutboxWriter`` asks ``current`` when woken.
final class DeliveryBatch: Sendable {
    /// The batch of the task handling the frame being processed, if any.
    @TaskLocal static var current: DeliveryBatch?

    /// The most frames of one connection whose deliveries are held back together: a client that
    /// never pauses still has its changes delivered after this many.
    static let maxFrames = 64

    private enum Phase { case closed, handling, deferred }

    /// The phase, the wake-ups held back (in order; each writer at most once per batch: an outbox
    /// wakes its writer only when its queue goes from empty to not empty), the frames handled since
    /// the last flush, and whether the loop has an idle flush of this batch to run.
    private struct State {
        var phase = Phase.closed
        var held: [@Sendable () -> Void] = []
        var frames = 0
        var idleFlushQueued = false
    }
    private let state = SanitizerVisibleMutex(State())

    init() {}

    /// Runs `body` with this batch as ``current``, holding wake-ups until the next ``flush()``.
    func run<T: Sendable>(_ body: () async -> T) async -> T {
        state.withLock { $0.phase = .handling }
        return await Self.$current.withValue(self) { await body() }
    }

    /// ``run(_:)`` for synchronous work on any thread, a task's or not (the log writer's thread
    /// runs the completions of one group commit in a batch: the replies they release go out
    /// together, written on that thread).
    func runHere<T>(_ body: () -> T) -> T {
        state.withLock { $0.phase = .handling }
        return Self.$current.withValue(self) { body() }
    }

    /// Holds `wake` back until ``flush()`` and returns true; returns false when the batch is closed
    /// (a task that inherited the batch and runs later must not wait for the connection's next
    /// frame: its caller wakes at once).
    func hold(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state -> Bool in
            guard state.phase != .closed else { return false }
            state.held.append(wake)
            return true
        }
    }

    /// Ends a burst of `frames` frames. Flushes now without a `loop`, off its thread, or once the
    /// batch holds ``maxFrames`` frames since its last flush; otherwise leaves what it holds for
    /// when `loop` goes idle (``EventLoop/whenIdle(_:)``), unless a later burst flushes it first.
    func endBurst(frames: Int, loop: EventLoop?) {
        enum Next { case flush, queueIdleFlush, wait }
        let onLoop = loop?.isOnLoop == true
        let next = state.withLock { state -> Next in
            state.frames += frames
            guard onLoop, state.frames < Self.maxFrames else { return .flush }
            state.phase = .deferred
            if state.idleFlushQueued { return .wait }
            state.idleFlushQueued = true
            return .queueIdleFlush
        }
        switch next {
        case .flush: flush()
        case .queueIdleFlush: loop?.whenIdle { [self] in flushIfDeferred() }
        case .wait: break
        }
    }

    /// The loop went idle: flushes unless a burst is being handled (its end decides).
    private func flushIfDeferred() {
        let deferred = state.withLock { state -> Bool in
            state.idleFlushQueued = false
            return state.phase == .deferred
        }
        if deferred { flush() }
    }

    /// Ends the batch: runs the wake-ups held back, in order, on the calling thread and outside any
    /// lock (a writer may write its frames right there). O(wake-ups).
    func flush() {
        let wakes = state.withLock { state in
            state.phase = .closed
            state.frames = 0
            defer { state.held = [] }
            return state.held
        }
        for wake in wakes { wake() }
    }

    /// The number of wake-ups held back (for tests).
    var heldCount: Int { state.withLock { $0.held.count } }
}
