import ContrailSupport
import ContrailWebSocket

/// Slows down the sources of failed credentials (a denied connection or `SessionCreate`, an unknown
/// session token) without ever refusing anyone: the answer to a source's failed attempt is delayed,
/// by ``ServerOptions/failedAttemptDelay`` at first, doubling with each further failure up to
/// ``ServerOptions/maxFailedAttemptDelay``; a source has at most
/// ``ServerOptions/maxDelayedAttemptsPerSource`` answers waiting at once (more failures are
/// answered at once and closed: they hold nothing). Only failures are ever delayed: a valid
/// credential from the same address is answered at once, whatever other clients there do. An
/// unknown session token counts but is answered at once: every client meets one after a restart
/// or an expiry and must open a new session promptly, and a token (381 random bits) needs no delay
/// to stay unguessable.
///
/// A source is a client address (see ``ClientAddress``); IPv6 addresses count by their /64, which
/// one host usually has whole. A source quiet for twice the longest delay is forgotten; the table
/// holds at most `maxSources` (the least recently failing is forgotten first). It also decides the
/// log lines: one when a source's episode starts and one when its delay reaches the cap.
final class AuthThrottle: Sendable {
    /// What a failed attempt gets.
    struct Answer: Equatable {
        /// How long to wait before answering (zero: at once).
        var delay: Duration
        /// Whether the attempt holds one of its source's waiting places (release it after answering).
        var holdsPlace: Bool
        /// What to log.
        var note: Note
    }

    /// What a failure means for the log.
    enum Note: Equatable {
        /// The first failure of an episode: log it.
        case firstOfEpisode
        /// Another failure of a logged episode: stay quiet.
        case repeated
        /// The delay just reached its cap after `count` failures: log it once.
        case reachedCap(count: Int)
    }

    private struct Source {
        var failures: Int
        var lastFailure: ElapsedClock.Instant
        var waiting: Int
    }

    /// The delay of a source's first failure.
    let initialDelay: Duration
    /// The longest delay.
    let maxDelay: Duration
    /// Answers one source may have waiting at once.
    let maxWaitingPerSource: Int
    /// Sources remembered at once.
    let maxSources: Int
    /// Answers waiting at once over all sources (each holds a connection).
    let maxWaiting: Int
    private let state = SanitizerVisibleMutex<(sources: [String: Source], waiting: Int)>(([:], 0))
    private let clock: ElapsedClock

    init(initialDelay: Duration, maxDelay: Duration, maxWaitingPerSource: Int, clock: ElapsedClock,
         maxSources: Int = 10_000, maxWaiting: Int = 1_024) {
        self.initialDelay = max(.zero, initialDelay)
        self.maxDelay = max(self.initialDelay, maxDelay)
        self.maxWaitingPerSource = max(0, maxWaitingPerSource)
        self.maxSources = max(1, maxSources)
        self.maxWaiting = max(0, maxWaiting)
        self.clock = clock
    }

    /// The key a client address counts under: an IPv6 address's /64, else the address.
    static func source(of client: String) -> String {
        guard let address = IPAddress(client), !address.isIPv4 else { return client }
        return "\(address.masked(toBits: 64))/64"
    }

    /// How long a source stays remembered after its last failure.
    private var memory: Duration { maxDelay * 2 }

    /// The delay after `failures` failures: `initialDelay` doubled `failures - 1` times, capped.
    func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(1, failures) {
            if delay >= maxDelay { break }
            delay = delay * 2
        }
        return min(delay, maxDelay)
    }

    /// Records a failed attempt from `source` and says when to answer it (at once when not
    /// `delayed`: it still counts towards the delay of the source's later failures). Call
    /// ``release(_:)`` after answering when the answer holds a place. O(1); O(sources) when the
    /// table is full.
    func failed(_ source: String, delayed: Bool = true) -> Answer {
        let now = clock.now
        return state.withLock { state in
            var entry: Source
            if let known = state.sources[source], now - known.lastFailure < memory || known.waiting > 0 {
                entry = known
            } else {
                if state.sources[source] == nil, state.sources.count >= maxSources { makeRoom(&state.sources, now: now) }
                entry = Source(failures: 0, lastFailure: now, waiting: 0)
            }
            entry.failures += 1
            entry.lastFailure = now
            let delay = delay(afterFailures: entry.failures)
            let note: Note =
                if entry.failures == 1 { .firstOfEpisode }
                else if delay == maxDelay && self.delay(afterFailures: entry.failures - 1) < maxDelay { .reachedCap(count: entry.failures) }
                else { .repeated }
            let holdsPlace = delayed && delay > .zero && entry.waiting < maxWaitingPerSource && state.waiting < maxWaiting
            if holdsPlace {
                entry.waiting += 1
                state.waiting += 1
            }
            state.sources[source] = entry
            return Answer(delay: holdsPlace ? delay : .zero, holdsPlace: holdsPlace, note: note)
        }
    }

    /// Gives back the waiting place an answer held.
    func release(_ source: String) {
        state.withLock { state in
            state.waiting = max(0, state.waiting - 1)
            guard var entry = state.sources[source] else { return }
            entry.waiting = max(0, entry.waiting - 1)
            state.sources[source] = entry
        }
    }

    /// The number of sources remembered and answers waiting (for tests and the log).
    var counts: (sources: Int, waiting: Int) {
        state.withLock { ($0.sources.count, $0.waiting) }
    }

    /// Forgets every quiet source; if none is, the least recently failing one without waiting answers.
    private func makeRoom(_ sources: inout [String: Source], now: ElapsedClock.Instant) {
        let memory = memory
        sources = sources.filter { now - $0.value.lastFailure < memory || $0.value.waiting > 0 }
        guard sources.count >= maxSources else { return }
        if let oldest = sources.filter({ $0.value.waiting == 0 }).min(by: { $0.value.lastFailure < $1.value.lastFailure }) {
            sources.removeValue(forKey: oldest.key)
        } else if let oldest = sources.min(by: { $0.value.lastFailure < $1.value.lastFailure }) {
            sources.removeValue(forKey: oldest.key)
        }
    }
}
