import Dispatch
import Synchronization

/// The counters and histograms a server keeps for `/metrics` (``MetricsEndpoint``). Every update is
/// one relaxed atomic add (a histogram's, three), taken where the event happens: no lock, no
/// allocation, nothing per subscriber. Gauges that a scrape can count (sessions, connections,
/// loaded scopes, resend-buffer bytes, the process's memory and descriptors) are not kept here:
/// the endpoint reads them when scraped.
final class ServerMetrics: Sendable {
    /// Why a session ended, as the `reason` label of `contrail_sessions_closed_total`.
    enum CloseReason: String, CaseIterable, Sendable {
        /// Nothing heard from its client for the session expiry.
        case expired
        /// Its user was revoked (``ContrailServer/revoke(user:)``).
        case revoked
        /// Its credential's expiry passed.
        case credentialExpired = "credential_expired"
        /// Its resend buffer went over its bound.
        case resendOverflow = "resend_overflow"
        /// The server drained (SIGTERM).
        case drained
        /// The server stopped.
        case stopped
    }

    /// Why a new connection got no session, as the `reason` label of `contrail_sessions_refused_total`.
    enum RefusalReason: String, CaseIterable, Sendable {
        /// The connection hook or the session hook denied it, or its session token is unknown.
        case denied
        /// A cluster server without NATS.
        case unavailable
        /// The server is draining.
        case draining
    }

    let sessionsCreated = Atomic<UInt64>(0)
    let sessionsResumed = Atomic<UInt64>(0)
    private let closed = CloseReason.allCases.map { _ in Count() }
    private let refused = RefusalReason.allCases.map { _ in Count() }
    let changeSetsAccepted = Atomic<UInt64>(0)
    let changeSetsRejected = Atomic<UInt64>(0)
    let changeSetsRepeated = Atomic<UInt64>(0)
    let fragmentsAccepted = Atomic<UInt64>(0)
    let fragmentsRejected = Atomic<UInt64>(0)
    /// Sequenced messages queued to sessions other than the sender: broadcasts of change sets.
    let fanOutMessages = Atomic<UInt64>(0)
    /// Each `fdatasync` of a scope log.
    let fsync = MetricsHistogram()
    /// From a change set's record handed to the log writer until it is durable (written and synced
    /// with its group): what the change set's reply waits for.
    let groupCommit = MetricsHistogram()
    /// Cluster mode: a log publish until JetStream's acknowledgement.
    let natsPublish = MetricsHistogram()
    /// Cluster mode: from a wake-up naming a log message until this server applied it (how far the
    /// replica runs behind the log).
    let natsApplyLag = MetricsHistogram()

    /// A counter in a class of its own, so that labelled counters can sit in an array.
    final class Count: Sendable {
        let value = Atomic<UInt64>(0)
    }

    init() {}

    /// Counts a session that ended for `reason`.
    func sessionClosed(_ reason: CloseReason, count: Int = 1) {
        closed[CloseReason.allCases.firstIndex(of: reason) ?? 0].value.add(UInt64(max(0, count)), ordering: .relaxed)
    }

    /// Sessions ended for `reason` so far.
    func sessionsClosed(_ reason: CloseReason) -> UInt64 {
        closed[CloseReason.allCases.firstIndex(of: reason) ?? 0].value.load(ordering: .relaxed)
    }

    /// Counts a connection refused a session for `reason`.
    func sessionRefused(_ reason: RefusalReason) {
        refused[RefusalReason.allCases.firstIndex(of: reason) ?? 0].value.add(1, ordering: .relaxed)
    }

    /// Connections refused a session for `reason` so far.
    func sessionsRefused(_ reason: RefusalReason) -> UInt64 {
        refused[RefusalReason.allCases.firstIndex(of: reason) ?? 0].value.load(ordering: .relaxed)
    }

    /// Counts one applied change set by its outcome: accepted when any fragment was, repeated when
    /// the server had applied its change-set id before, rejected otherwise.
    func changeSetApplied(accepted: Int, rejected: Int, repeated: Bool) {
        if repeated {
            changeSetsRepeated.add(1, ordering: .relaxed)
        } else if accepted > 0 {
            changeSetsAccepted.add(1, ordering: .relaxed)
        } else {
            changeSetsRejected.add(1, ordering: .relaxed)
        }
        if accepted > 0 { fragmentsAccepted.add(UInt64(accepted), ordering: .relaxed) }
        if rejected > 0 { fragmentsRejected.add(UInt64(rejected), ordering: .relaxed) }
    }

    /// Counts a change set refused whole before it reached its scope (no write grant, over a limit,
    /// invalid fragments, its procedure failed).
    func changeSetRefused(fragments: Int) {
        changeSetsRejected.add(1, ordering: .relaxed)
        if fragments > 0 { fragmentsRejected.add(UInt64(fragments), ordering: .relaxed) }
    }

    /// Counts `count` messages fanned out to other sessions.
    func fannedOut(_ count: Int) {
        if count > 0 { fanOutMessages.add(UInt64(count), ordering: .relaxed) }
    }

    /// A monotonic timestamp in nanoseconds, for the histograms (one vDSO call).
    static func now() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }

    /// Observes the time since `start` (a ``now()``) in `histogram`.
    static func observe(_ histogram: MetricsHistogram, since start: UInt64) {
        let end = now()
        histogram.observe(nanoseconds: end >= start ? end - start : 0)
    }
}
