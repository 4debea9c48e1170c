/// How a client retries after a lost connection: capped exponential backoff with jitter.
///
/// Attempt n (from 0) waits `min(maximum, initial * 2^n)`, reduced by a random share of up to
/// `jitter` (0...1) so that many clients do not reconnect in step.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The first delay.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration
    /// The random share taken off each delay, 0...1.
    public var jitter: Double

    /// Creates a policy.
    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(10), jitter: Double = 0.5) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The delay before attempt `attempt` (0-based).
    public func delay(attempt: Int) -> Duration {
        let base = initial.seconds * pow2(min(attempt, 30))
        let capped = min(base, maximum.seconds)
        let factor = 1 - jitter * Double.random(in: 0...1)
        return .nanoseconds(Int64(max(0, capped * factor) * 1e9))
    }

    private func pow2(_ n: Int) -> Double { Double(1 << n) }
}
