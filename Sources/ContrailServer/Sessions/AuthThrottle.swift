import ContrailSupport
import ContrailWebSocket

/// Rate-limits failed session attempts per peer address: after `limit` failures within `window`
/// the peer is refused for `window`. It also decides the log lines: one per episode (the first
/// failure, and the moment a peer is refused), not one per attempt.
final class AuthThrottle: Sendable {
    /// What a failure means for the log.
    enum Failure: Equatable {
        /// The first failure of an episode: log it.
        case firstOfEpisode
        /// Another failure of a logged episode: stay quiet.
        case repeated
        /// This failure reached the limit: log that the peer is refused from now on.
        case nowRefused(count: Int)
    }

    private struct Episode {
        var started: ElapsedClock.Instant
        var failures: Int
        var refusedUntil: ElapsedClock.Instant?
    }

    /// Failures allowed within `window` before a peer is refused.
    let limit: Int
    /// How long failures count, and how long a peer is refused.
    let window: Duration
    private let episodes = SanitizerVisibleMutex<[String: Episode]>([:])
    private let clock: ElapsedClock
    private static let maxPeers = 10_000

    init(limit: Int, window: Duration, clock: ElapsedClock) {
        self.limit = max(1, limit)
        self.window = window
        self.clock = clock
    }

    /// How much longer `peer` is refused, or nil if it may try.
    func refusal(of peer: String) -> Duration? {
        let now = clock.now
        return episodes.withLock { episodes in
            guard let until = episodes[peer]?.refusedUntil, until > now else { return nil }
            return until - now
        }
    }

    /// Records a failed attempt by `peer`. O(1), O(peers) now and then to forget old episodes.
    func recordFailure(of peer: String) -> Failure {
        let now = clock.now
        return episodes.withLock { episodes in
            if episodes.count >= Self.maxPeers {
                episodes = episodes.filter { now - $0.value.started < window || ($0.value.refusedUntil.map { $0 > now } ?? false) }
            }
            var episode = episodes[peer] ?? Episode(started: now, failures: 0)
            let expired = now - episode.started >= window && (episode.refusedUntil.map { $0 <= now } ?? true)
            if expired { episode = Episode(started: now, failures: 0) }
            episode.failures += 1
            defer { episodes[peer] = episode }
            if episode.failures == 1 { return .firstOfEpisode }
            if episode.failures == limit {
                episode.refusedUntil = now + window
                return .nowRefused(count: episode.failures)
            }
            return .repeated
        }
    }

    /// A successful attempt ends `peer`'s episode.
    func recordSuccess(of peer: String) {
        _ = episodes.withLock { $0.removeValue(forKey: peer) }
    }
}
