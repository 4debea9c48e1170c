/// The server's time: ``ServerOptions/clock`` (any `Clock<Duration>`: the continuous clock in
/// production, a virtual one in tests), with instants measured from the moment the server was made,
/// so sessions, scopes and the throttle can store and compare them whatever the clock's own instant
/// type is. Every server timer and timeout (keep-alive ticks, session expiry, idle scopes, the
/// establish timeout, failed-attempt windows, the cluster's catch-up retries) reads and sleeps on it.
struct ServerClock: Sendable {
    /// A point in the server's time: the duration since the server's start.
    struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the server's start.
        var offset: Duration

        /// The instant `duration` after this one.
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The duration from this instant to `other`.
        func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        /// "t+OFFSET".
        var description: String { "t+\(offset)" }

        /// The instant `rhs` after `lhs`.
        static func + (lhs: Instant, rhs: Duration) -> Instant { lhs.advanced(by: rhs) }
        /// The duration from `rhs` to `lhs`.
        static func - (lhs: Instant, rhs: Instant) -> Duration { rhs.duration(to: lhs) }
    }

    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (_ until: Duration) async throws -> Void

    /// The server's time on `clock`, starting now.
    init(_ clock: any Clock<Duration>) {
        self = Self.starting(clock)
    }

    private init(elapsed: @escaping @Sendable () -> Duration, sleeper: @escaping @Sendable (Duration) async throws -> Void) {
        self.elapsed = elapsed
        self.sleeper = sleeper
    }

    private static func starting<C: Clock<Duration>>(_ clock: C) -> ServerClock {
        let start = clock.now
        return ServerClock(elapsed: { start.duration(to: clock.now) },
                           sleeper: { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) })
    }

    /// The current instant.
    var now: Instant { Instant(offset: elapsed()) }

    /// Suspends until `deadline` (at once if it has passed). Throws `CancellationError` when the
    /// task is cancelled first.
    func sleep(until deadline: Instant) async throws {
        try await sleeper(deadline.offset)
    }

    /// Suspends for `duration`. Throws `CancellationError` when the task is cancelled first.
    func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}
