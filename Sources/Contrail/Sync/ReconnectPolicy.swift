/// How a client retries after a lost connection: capped exponential backoff with jitter, forgiven
/// only once a connection has stayed up for a while.
///
/// Attempt n (from 0) waits `min(maximum, initial * 2^n)`, reduced by a random share of up to
/// `jitter` (0...1) so that many clients do not reconnect in step. n counts every failed attempt
/// and every lost connection since the last connection that stayed up for `healthyAfter`: a
/// server that accepts sessions and ends them at once (a scope it cannot load, a refusal, a drain)
/// is backed off from exactly like one that cannot be reached. So a client reconnects at most once
/// per `maximum * (1 - jitter)` (5 s with the defaults) once it has failed seven times in a row,
/// and at most about 8 times in its first 10 s of failures.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The first delay.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration
    /// The random share taken off each delay, 0...1.
    public var jitter: Double
    /// How long a connection must stay up before the backoff starts over.
    public var healthyAfter: Duration

    /// Creates a policy.
    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(10), jitter: Double = 0.5,
                healthyAfter: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = min(max(jitter, 0), 1)
        self.healthyAfter = healthyAfter
    }

    /// The delay before attempt `attempt` (0-based).
    public func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, random: Double.random(in: 0...1))
    }

    /// The delay before attempt `attempt` for a given draw `random` in 0...1 (0: the full delay,
    /// 1: the full delay less the whole jitter share).
    public func delay(attempt: Int, random: Double) -> Duration {
        let base = initial.seconds * pow2(min(max(attempt, 0), 30))
        let capped = min(base, maximum.seconds)
        let factor = 1 - jitter * min(max(random, 0), 1)
        return .nanoseconds(Int64(max(0, capped * factor) * 1e9))
    }

    private func pow2(_ n: Int) -> Double { Double(1 << n) }
}
