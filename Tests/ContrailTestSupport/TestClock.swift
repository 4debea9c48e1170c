import ContrailSupport

/// A clock whose time moves only when a test says so: `advance(by:)` resumes every sleeper whose
/// deadline it reaches, in deadline order. Code under test takes it as its `any Clock<Duration>`,
/// so keep-alives, timeouts, backoffs and expiries run in virtual time, with no sleeps and no
/// wall-clock bounds.
///
/// ```swift
/// let clock = TestClock()
/// let options = ClientOptions(clock: clock)
/// …
/// await clock.waitForSleepers(1)      // the reconnect backoff has started
/// clock.advance(by: .seconds(2))      // and now it has run out
/// ```
public final class TestClock: Clock, Sendable {
    /// A point in virtual time: the duration since the clock was made.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        /// Virtual time since the clock's start.
        public var offset: Duration

        /// The instant `duration` after this one.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        /// "t+OFFSET".
        public var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var sleeperWaiters: [(id: UInt64, count: Int, dueWithin: Duration?, continuation: CheckedContinuation<Void, Never>)] = []

        /// How many sleepers are due within `window` from now (all of them for nil).
        func sleepers(dueWithin window: Duration?) -> Int {
            guard let window else { return sleepers.count }
            let limit = now.advanced(by: window)
            return sleepers.reduce(0) { $0 + ($1.deadline <= limit ? 1 : 0) }
        }
    }

    private let state = SanitizerVisibleMutex(State())

    /// A clock at virtual time zero.
    public init() {}

    /// The current virtual time.
    public var now: Instant { state.withLock { $0.now } }

    /// Virtual time has no resolution limit.
    public var minimumResolution: Duration { .zero }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many tasks sleep until at most `window` from now (a short backoff, say, while a long
    /// keep-alive sleeps too).
    public func sleeperCount(dueWithin window: Duration) -> Int { state.withLock { $0.sleepers(dueWithin: window) } }

    /// Suspends until `advance` reaches `deadline` (at once when it already has). Throws
    /// `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { s -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= s.now { return .success(()) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) } else { wakeSleeperWaiters() }
            }
        } onCancel: {
            let cancelled = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let index = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }

    /// Moves virtual time forward by `duration` and resumes the sleepers whose deadlines it reaches,
    /// earliest first. O(n log n) in the number of sleepers.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a TestClock only moves forward")
        let due = state.withLock { s -> [Sleeper] in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
        wakeSleeperWaiters()
    }

    /// Moves virtual time to `instant` (nothing happens when it is not in the future).
    public func advance(to instant: Instant) {
        let step = now.duration(to: instant)
        if step > .zero { advance(by: step) }
    }

    /// Returns once at least `count` tasks sleep on this clock (with `dueWithin`: sleep until at
    /// most that long from now, so that a test can wait for a short backoff while a long keep-alive
    /// sleeps too): a test calls it before `advance` so that the code under test has really started
    /// waiting. A bounded wait: it gives up after `timeout` of real time and returns false.
    @discardableResult
    public func waitForSleepers(_ count: Int = 1, dueWithin: Duration? = nil, timeout: Duration = .seconds(30)) async -> Bool {
        let waiterID = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        let ready = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let satisfied = self.state.withLock { s -> Bool in
                        if s.sleepers(dueWithin: dueWithin) >= count { return true }
                        s.sleeperWaiters.append((waiterID, count, dueWithin, continuation))
                        return false
                    }
                    if satisfied { continuation.resume() }
                }
                return true
            }
            group.addTask {
                try? await ContinuousClock().sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first { self.releaseSleeperWaiter(waiterID) }
            group.cancelAll()
            await group.waitForAll()
            return first
        }
        return ready
    }

    private func wakeSleeperWaiters() {
        let woken = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            let ready = s.sleeperWaiters.filter { $0.count <= s.sleepers(dueWithin: $0.dueWithin) }
            s.sleeperWaiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
            return ready.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Resumes one `waitForSleepers` caller whose bound ran out (if it still waits).
    private func releaseSleeperWaiter(_ id: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let index = s.sleeperWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return s.sleeperWaiters.remove(at: index).continuation
        }
        waiter?.resume()
    }
}
