/// Named revisions from the app (Protocol §8.26): the scope reaches the server through the session
/// that syncs it, which the scope holds only as an opaque owner.
extension Scope {
    /// Names the scope's state on the server `label` once every local change made before the call
    /// is synced; returns the sequence number of the scope's last change set the revision includes.
    /// `contrail scope history` lists it, `contrail scope at`/`restore` take it.
    ///
    /// ```swift
    /// try await session.fetch(scope)
    /// let sequence = try await scope.markRevision("v1")
    /// ```
    /// Throws `SyncError.notFetched` when no session syncs the scope, `.extensionUnavailable`
    /// when its server does not offer `MarkRevision` (an original Jetstream server, or one that
    /// keeps no history), `.revisionRefused` for a label in use.
    @discardableResult
    public func markRevision(_ label: String, timeout: Duration? = nil) async throws(SyncError) -> Int {
        guard let session = syncOwner as? Session else { throw .notFetched(name) }
        return try await session.markRevision(label, in: self, timeout: timeout)
    }
}
