import Foundation

/// The admin surface's view of a cluster scope: its state lives in the cluster's JetStream log,
/// which NATS stores (and backs up); compaction and file backups are a single server's.
extension ClusterScope {
    /// Refused: the cluster's log is compacted by the cluster (snapshots in JetStream).
    func compactNow() async throws(AdminError) -> CompactionReport { throw .unsupportedInCluster }

    /// Refused: back up the NATS JetStream stream and bucket instead.
    func backup(into directory: URL) async throws(AdminError) -> BackupReport.Entry? { throw .unsupportedInCluster }

    /// The replica's object count (a replica is in memory while the server holds it).
    var loadedObjectCount: Int? { get async { await objectCount } }
}
