/// Readings of a client's clock (`ClientOptions.clock`, any `Clock<Duration>`) as durations since
/// the client was made, so that deadlines can be stored and compared without knowing the clock's
/// instant type.
struct Timeline: Sendable {
    /// The clock everything the client waits on sleeps on.
    let clock: any Clock<Duration>
    private let reading: @Sendable () -> Duration

    init(_ clock: any Clock<Duration>) {
        self.clock = clock
        reading = Self.reader(clock)
    }

    private static func reader<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }

    /// The time since the timeline began.
    var now: Duration { reading() }

    /// Sleeps on the clock for `duration`; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws {
        try await clock.sleep(for: duration)
    }
}
