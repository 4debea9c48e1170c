import Synchronization

/// A latency histogram in the Prometheus sense: fixed upper bounds in seconds, one counter per
/// bucket, a count and a sum. Observing is lock-free (three relaxed atomic adds and a scan of the
/// bounds); a scrape reads the counters one by one, so it may see an observation in the count a
/// moment before it is in its bucket (Prometheus tolerates that, and every read is monotonic).
final class MetricsHistogram: Sendable {
    /// A counter in a class of its own, so that the histogram can hold any number of them.
    private final class Cell: Sendable {
        let value = Atomic<UInt64>(0)
    }

    /// The upper bounds of the buckets, in seconds, ascending (the `+Inf` bucket is implicit).
    let bounds: [Double]
    /// The bounds in nanoseconds, for the hot path.
    private let boundsNanoseconds: [UInt64]
    /// Observations per bucket (not cumulative; the last is `+Inf`).
    private let buckets: [Cell]
    private let sumNanoseconds = Atomic<UInt64>(0)
    private let observations = Atomic<UInt64>(0)

    /// Latencies from 50 µs to 10 s: disk syncs, group commits, NATS round trips.
    static let latencyBounds: [Double] = [0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05,
                                          0.1, 0.25, 0.5, 1, 2.5, 10]

    init(bounds: [Double] = MetricsHistogram.latencyBounds) {
        self.bounds = bounds.sorted()
        boundsNanoseconds = self.bounds.map { UInt64(($0 * 1e9).rounded()) }
        buckets = (0...bounds.count).map { _ in Cell() }
    }

    /// Records one observation of `nanoseconds`. O(buckets), no lock.
    func observe(nanoseconds: UInt64) {
        var index = 0
        while index < boundsNanoseconds.count, nanoseconds > boundsNanoseconds[index] { index += 1 }
        buckets[index].value.add(1, ordering: .relaxed)
        sumNanoseconds.add(nanoseconds, ordering: .relaxed)
        observations.add(1, ordering: .relaxed)
    }

    /// Records one observation of `duration` (negative durations count as 0).
    func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return observe(nanoseconds: 0) }
        observe(nanoseconds: UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000))
    }

    /// What a scrape reports: cumulative counts per bound (then `+Inf`), the count and the sum in seconds.
    struct Snapshot: Sendable {
        let cumulative: [(bound: Double, count: UInt64)]
        let count: UInt64
        let sum: Double
    }

    /// Reads the counters. The `+Inf` bucket is reported as the count, and every bucket is capped by
    /// the ones above it, so the snapshot is always consistent (cumulative, ending at the count).
    func snapshot() -> Snapshot {
        let sum = Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9
        var running: UInt64 = 0
        var cumulative: [(bound: Double, count: UInt64)] = []
        cumulative.reserveCapacity(bounds.count)
        for (index, bound) in bounds.enumerated() {
            running += buckets[index].value.load(ordering: .relaxed)
            cumulative.append((bound, running))
        }
        running += buckets[bounds.count].value.load(ordering: .relaxed)
        let count = max(running, observations.load(ordering: .relaxed))
        return Snapshot(cumulative: cumulative.map { ($0.bound, min($0.count, count)) }, count: count, sum: sum)
    }
}
