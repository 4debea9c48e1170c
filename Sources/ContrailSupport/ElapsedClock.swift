/// An injected clock (any `Clock<Duration>`: the continuous clock in production, a virtual one in
/// tests) read as the duration since this value was made, so deadlines can be stored and compared
/// without knowing the clock's own instant type. The event loop, the sync client, the scope's
/// minimum sync interval and the server all keep time with it.
package struct ElapsedClock: Sendable {
    /// A point in this clock's time: the duration since the clock was made.
    package struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the clock was made.
        package var offset: Duration

        /// The instant at `offset` since the clock was made.
        package init(offset: Duration) { self.offset = offset }
        /// The instant `duration` after this one.
        package func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The duration from this instant to `other`.
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        package static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        /// "t+OFFSET".
        package var description: String { "t+\(offset)" }
        /// The instant `rhs` after `lhs`.
        package static func + (lhs: Instant, rhs: Duration) -> Instant { lhs.advanced(by: rhs) }
        /// The duration from `rhs` to `lhs`.
        package static func - (lhs: Instant, rhs: Instant) -> Duration { rhs.duration(to: lhs) }
    }

    /// The clock read.
    package let clock: any Clock<Duration>
    /// Whether `clock` is the real `ContinuousClock` (read directly, and a system call can wait for it).
    package let isContinuous: Bool
    private let origin: ContinuousClock.Instant
    private let elapsedOnInjected: (@Sendable () -> Duration)?
    private let sleepOnInjected: (@Sendable (Duration) async throws -> Void)?

    /// `clock`'s time, starting now.
    package init(_ clock: any Clock<Duration>) {
        self.clock = clock
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

    /// The time since this clock was made.
    @inline(__always)
    package var elapsed: Duration {
        if let elapsedOnInjected { return elapsedOnInjected() }
        return origin.duration(to: .now)
    }

    /// The current instant.
    package var now: Instant { Instant(offset: elapsed) }

    /// Suspends until `deadline` (at once if it has passed). Throws `CancellationError` when the
    /// task is cancelled first.
    package func sleep(until deadline: Instant) async throws {
        if let sleepOnInjected {
            try await sleepOnInjected(deadline.offset)
        } else {
            try await ContinuousClock().sleep(until: origin.advanced(by: deadline.offset), tolerance: nil)
        }
    }

    /// Suspends for `duration`. Throws `CancellationError` when the task is cancelled first.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}
