import Foundation

/// The admin surface's view of a cluster scope: its state lives in the cluster's JetStream log,
/// which NATS stores (and backs up); compaction and file backups are a single server's.
extension ClusterScope {
    /// Refused: the cluster's log is compacted by the cluster (snapshots in JetStream).
    func compactNow() async throws(AdminError) -> CompactionReport { throw .unsupportedInCluster }

    /// Refused: back up the NATS JetStream stream and bucket instead.
    func backup(into directory: URL) async throws(AdminError) -> BackupReport.Entry? { throw .unsupportedInCluster }

    /// Refused: a cluster scope's history is its JetStream subject, which the cluster compacts with
    /// snapshots and NATS trims by its own limits; history is a single server's (§8.26).
    func history(since: HistoryPoint?) async throws(AdminError) -> ScopeHistory { throw .unsupportedInCluster }

    /// Refused, as ``history(since:)``.
    func state(at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, store: ScopeStore) { throw .unsupportedInCluster }

    /// Refused, as ``history(since:)``.
    func markRevision(_ label: String, user: String) async throws(AdminError) -> ScopeRevision { throw .unsupportedInCluster }

    /// The replica's object count (a replica is in memory while the server holds it).
    var loadedObjectCount: Int? { get async { await objectCount } }
}
