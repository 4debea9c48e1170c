import Foundation

/// Timing helpers for the benchmarks. Every figure is the best of `rounds` runs, to keep noise down.
enum Stopwatch {
    /// Seconds taken by the fastest of `rounds` runs of `body`.
    static func best(rounds: Int = 5, _ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<max(1, rounds) {
            let start = ContinuousClock.now
            try body()
            best = min(best, seconds(ContinuousClock.now - start))
        }
        return best
    }

    /// Seconds taken by the fastest of `rounds` runs of the async `body`.
    static func bestAsync(rounds: Int = 3, _ body: () async throws -> Void) async rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<max(1, rounds) {
            let start = ContinuousClock.now
            try await body()
            best = min(best, seconds(ContinuousClock.now - start))
        }
        return best
    }

    static func seconds(_ duration: Duration) -> Double {
        let (s, attoseconds) = duration.components
        return Double(s) + Double(attoseconds) / 1e18
    }

    /// The `p`-th percentile (0...1) of `samples`, which need not be sorted.
    static func percentile(_ samples: [Double], _ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = Int((p * Double(sorted.count - 1)).rounded())
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
