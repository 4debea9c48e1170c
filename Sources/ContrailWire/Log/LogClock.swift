import ContrailSupport

/// A cheap monotonic clock for ``FsyncPolicy/interval(_:)`` checks on every append.
///
/// On Linux it reads `CLOCK_MONOTONIC_COARSE` (about 7 ns, a few milliseconds of resolution,
/// plenty for sync intervals) instead of `ContinuousClock.now` (about 90 ns on the CI machine).
enum LogClock {
    /// Nanoseconds since an arbitrary fixed point.
    @inline(__always)
    static func now() -> Int64 {
        Platform.coarseMonotonicNanoseconds()
    }

    /// `duration` in nanoseconds, clamped to `0...Int64.max`.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64.max / 1_000_000_000 - 1 else { return .max }
        return max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
