/// The clock an `EventLoop`'s timers follow, with its time as the duration since the loop started.
///
/// With the real `ContinuousClock` the loop itself waits for the nearest deadline (the epoll/poll
/// timeout). Any other clock (e.g. a test's virtual clock) cannot be waited on by a system call: each
/// timer then has a task that sleeps on that clock until the timer's deadline and wakes the loop, which
/// fires whatever is due by the clock's `now`.
struct LoopClock: Sendable {
    /// Whether this is the real `ContinuousClock` (the loop's own wait is the timer).
    let isContinuous: Bool
    private let origin: ContinuousClock.Instant
    private let elapsedOnInjected: (@Sendable () -> Duration)?
    private let sleepOnInjected: (@Sendable (Duration) async throws -> Void)?

    init(_ clock: any Clock<Duration>) {
        origin = .now
        if clock is ContinuousClock {
            isContinuous = true
            elapsedOnInjected = nil
            sleepOnInjected = nil
        } else {
            isContinuous = false
            (elapsedOnInjected, sleepOnInjected) = Self.erase(clock)
        }
    }

    private static func erase<C: Clock<Duration>>(_ clock: C)
        -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void)
    {
        let start = clock.now
        return ({ start.duration(to: clock.now) },
                { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) })
    }

    /// The time since the loop started, by its clock.
    @inline(__always)
    func now() -> Duration {
        if let elapsedOnInjected { return elapsedOnInjected() }
        return origin.duration(to: .now)
    }

    /// Sleeps on an injected clock until `offset` after the loop's start (returns at once on the
    /// continuous clock, which the loop waits on itself). Throws `CancellationError` when cancelled.
    func sleep(until offset: Duration) async throws {
        try await sleepOnInjected?(offset)
    }
}
