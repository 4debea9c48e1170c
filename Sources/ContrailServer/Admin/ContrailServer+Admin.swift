import ContrailWire
import Foundation

/// The admin surface in Swift: what `/api/admin/…` and `contrail admin` do, for a program that
/// embeds the server. None of these checks a credential: the program is trusted.
extension ContrailServer {
    /// Every live session, by number: identity, address, scopes, bytes queued. Never a token. O(sessions).
    public func sessions() async -> [AdminSession] {
        await ServerAdmin(core: core).sessions()
    }

    /// Every scope that exists (in memory or in the data directory), by name, without loading
    /// any. O(scopes), plus reading the log of a scope on disk whose file name is hashed.
    public func scopes() async -> [AdminScope] {
        await ServerAdmin(core: core).scopes()
    }

    /// Ends the session numbered `number` (``AdminSession/number``): its connection is closed with
    /// 4097 `session-revoked` and it cannot resume; its client may open a new session, which the
    /// server's authentication decides. ``revoke(user:)`` ends all of a user's.
    /// - Throws: ``AdminError/unknownSession(_:)``.
    public func endSession(number: Int) async throws(AdminError) {
        try await ServerAdmin(core: core).endSession(number: number)
    }

    /// The scope's state, `{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}` (the shape
    /// of `Scope.stateJSON()`), which ``importScope(_:state:)`` takes. O(objects).
    /// - Throws: ``AdminError/unknownScope(_:)``, ``AdminError/invalidScopeName(name:reason:)``.
    public func exportScope(_ name: String) async throws(AdminError) -> JSON {
        try await ServerAdmin(core: core).exportScope(name)
    }

    /// Makes the scope's state `state` (an export, of this scope or another): one atomic change set
    /// against its current state, validated, logged and broadcast like a client's (every
    /// subscribed session sees it), the import's root becoming the scope's root; properties the
    /// import does not name become `null`, objects it does not hold leave the tree. A scope that
    /// does not exist is created, as a client's first write would create it. Returns how many
    /// fragments it took (0: the scope held that state already). O(objects).
    /// - Throws: ``AdminError/invalidState(_:)`` for a body of another shape,
    ///   ``AdminError/importRejected(_:)`` when the scope refuses it (nothing changes).
    public func importScope(_ name: String, state: JSON) async throws(AdminError) -> Int {
        try await ServerAdmin(core: core).importScope(name, state: state)
    }

    /// Replaces the scope's log with one snapshot record now (what the server does by itself once
    /// a log grows to four times its last compacted size). O(objects).
    /// - Throws: ``AdminError/unknownScope(_:)``, ``AdminError/noDataDirectory``, ``AdminError/unsupportedInCluster``.
    public func compactScope(_ name: String) async throws(AdminError) -> CompactionReport {
        try await ServerAdmin(core: core).compactScope(name)
    }

    /// The scope's history (Protocol §8.26) after `since` (nil: all it keeps): each accepted change
    /// set with its sequence number, time, user and fragments, and the named revisions. What is kept
    /// is ``ServerOptions/historyRetention``'s. O(history size).
    /// - Throws: ``AdminError/unknownScope(_:)``, ``AdminError/noDataDirectory`` (a server in
    ///   memory; a cluster's history is in JetStream), ``AdminError/unknownRevision(_:)``.
    public func history(of scope: String, since: HistoryPoint? = nil) async throws(AdminError) -> ScopeHistory {
        try await ServerAdmin(core: core).history(of: scope, since: since)
    }

    /// The scope's state after `point` (the shape of ``exportScope(_:)``), rebuilt from its history,
    /// and the sequence number `point` stands for. O(the size of the history file that holds it).
    /// - Throws: ``AdminError/historyUnavailable(_:)`` for a point no longer kept, as ``history(of:since:)``.
    public func scopeState(_ scope: String, at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, state: JSON) {
        try await ServerAdmin(core: core).scopeState(scope, at: point)
    }

    /// Brings the scope back to its state after `point` as one new atomic change set, which every
    /// subscribed session receives like any other (nothing in the history is rewritten). Returns
    /// the sequence number restored and how many fragments the change set took (0: nothing to do).
    /// Shared texts keep their current content. O(objects + the history file that holds `point`).
    /// - Throws: as ``scopeState(_:at:)``, ``AdminError/importRejected(_:)``.
    public func restoreScope(_ scope: String, to point: HistoryPoint) async throws(AdminError) -> (sequence: Int, fragments: Int) {
        try await ServerAdmin(core: core).restoreScope(scope, to: point, identity: .unrestricted)
    }

    /// Names the scope's current state `label` (§8.26), as `user`; durable when it returns.
    /// - Throws: ``AdminError/invalidRevision(_:)``, ``AdminError/revisionExists(_:)``, as ``history(of:since:)``.
    @discardableResult
    public func markRevision(_ label: String, scope: String, user: String = "") async throws(AdminError) -> ScopeRevision {
        try await ServerAdmin(core: core).markRevision(label, scope: scope, user: user)
    }

    /// Takes a consistent backup of every scope into `directory` (created; it must not exist)
    /// while the server runs: each scope as a log of one snapshot record taken at one point of its
    /// order, which holds every change set acknowledged before the call and no partial one, written
    /// once everything before that point is durable; then the manifest `backup.json`, last. Scopes
    /// are independent (a change set touches one), so these points together are a state the server
    /// was in. Change sets go on being accepted meanwhile. Restore with
    /// ``restoreBackup(from:into:)`` (or serve a copy: the directory is a data directory).
    /// O(objects); the I/O runs on the server's log writer thread.
    /// - Throws: ``AdminError/noDataDirectory`` for a server in memory, ``AdminError/backupExists(path:)``,
    ///   ``AdminError/storage(_:)`` naming the scope that could not be read or written (a damaged
    ///   log fails the backup: no manifest is written without it).
    public func backup(to directory: URL) async throws(AdminError) -> BackupReport {
        try await ServerAdmin(core: core).backup(to: directory)
    }

    /// Restores the backup in `backup` (``backup(to:)``) into the data directory `dataDirectory`
    /// (created if needed), which must hold no scope log: every log is checked first, then copied
    /// and synced. Offline: run it before starting a server on that directory. Blocking file I/O:
    /// call it from a thread that may block (a command-line tool's), not from the cooperative pool.
    /// O(backup size).
    /// - Throws: ``AdminError/invalidBackup(_:)`` (no manifest: the backup did not finish; a log
    ///   that does not replay), ``AdminError/restoreTargetNotEmpty(path:)``, ``AdminError/storage(_:)``.
    public static func restoreBackup(from backup: URL, into dataDirectory: URL) throws(AdminError) -> BackupReport {
        try ScopeBackup.restore(from: backup, into: dataDirectory)
    }
}
