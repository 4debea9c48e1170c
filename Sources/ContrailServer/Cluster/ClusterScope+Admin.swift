import ContrailNATS
import Foundation

/// The admin surface's view of a cluster scope: its state lives in the cluster's JetStream log,
/// which NATS stores (and backs up); compaction and file backups are a single server's. History
/// (§8.26) is read from JetStream by ``ClusterHistory``, the same on every server.
extension ClusterScope {
    /// Refused: the cluster's log is compacted by the cluster (snapshots in JetStream).
    func compactNow() async throws(AdminError) -> CompactionReport { throw .unsupportedInCluster }

    /// Refused: back up the NATS JetStream stream and bucket instead.
    func backup(into directory: URL) async throws(AdminError) -> BackupReport.Entry? { throw .unsupportedInCluster }

    /// The scope's history after `since`: the change sets in its subject after the oldest base that
    /// still serves (``ClusterHistory``), and its revisions. O(what the cluster keeps of it).
    func history(since: HistoryPoint?) async throws(AdminError) -> ScopeHistory {
        try await ClusterHistory.history(of: name, key: snapshotKey, subject: subject, since: since, limits: limits,
                                         try await historyHandles(), options: link.options)
    }

    /// The state after `point`, replayed from the newest base at or before it. O(the messages between).
    func state(at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, store: ScopeStore) {
        try await ClusterHistory.state(of: name, key: snapshotKey, subject: subject, at: point, limits: limits,
                                       try await historyHandles(), options: link.options)
    }

    /// Names the scope's state `label` once this server's change sets queued or in flight are
    /// applied and the log is caught up: stored create-only in the history bucket, so a label is
    /// taken once across the cluster, and every server reads it.
    func markRevision(_ label: String, user: String) async throws(AdminError) -> ScopeRevision {
        if let problem = ScopeRevision.problem(with: label) { throw .invalidRevision(problem) }
        let handles = try await historyHandles()
        // A name the cluster never wrote stays unwritten (no genesis for a mark).
        guard try await ClusterHistory.exists(key: snapshotKey, subject: subject, handles, options: link.options) else { throw .unknownScope(name) }
        let sequence: Int
        do throws(NATSError) { sequence = try await settledSequence() } catch {
            throw .storage("scope '\(name)' cannot be read from the cluster: \(error)")
        }
        let revision = ScopeRevision(label: label, sequence: sequence, time: wallClock(), user: user)
        try await ClusterHistory.mark(revision, of: snapshotKey, handles)
        return revision
    }

    /// The cluster's handles, or a storage error naming why NATS cannot be used.
    private func historyHandles() async throws(AdminError) -> ClusterLink.Handles {
        do throws(NATSError) { return try await link.handles() } catch {
            throw .storage("the cluster is unavailable: \(error)")
        }
    }

    /// The replica's object count (a replica is in memory while the server holds it).
    var loadedObjectCount: Int? { get async { objectCount } }
}
