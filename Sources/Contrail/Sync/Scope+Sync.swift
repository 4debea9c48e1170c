/// What the sync layer keeps on a scope, through the scope's neutral settlement hooks: the scope
/// only knows that another layer settles its change sets (`awaitsSettlement`) and which restored
/// ones wait for it (`unsettledRestored`).
extension Scope {
    /// Whether the sync layer settles this scope's change sets (they start `syncing` instead of
    /// `completed`).
    package var isSynced: Bool {
        get { awaitsSettlement }
        set { awaitsSettlement = newValue }
    }

    /// Local change sets restored from a fragment log that the server never acknowledged; the sync
    /// layer sends them once the scope is fetched.
    var restoredPending: [ChangeSet] {
        get { unsettledRestored }
        set { unsettledRestored = newValue }
    }

    /// Makes the scope's local change sets wait for a sync that does not run in this process (a
    /// process that only edits offline, into a fragment log): they start `syncing` and stay so.
    /// The next process that attaches the log restores them unsettled, and its session sends them
    /// once it fetches the scope.
    package func syncOffline() {
        isSynced = true
    }
}
