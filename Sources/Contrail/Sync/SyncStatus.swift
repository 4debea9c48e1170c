/// Where a session's local changes stand with the server (sync-status events).
public enum SyncStatus: Sendable, Equatable {
    /// `pending` local change sets wait for the server's reply (or to be sent).
    case syncing(pending: Int)
    /// Every local change set is settled.
    case synced
}
