import ContrailWire
import Foundation

/// What the admin surface does, on a server's ``ServerCore``: ``ContrailServer``'s admin methods
/// and ``AdminAPI`` both call it. No credential is checked here.
struct ServerAdmin: Sendable {
    let core: ServerCore

    /// Every live session, by number: identity, address, scopes, bytes queued. O(sessions).
    func sessions() async -> [AdminSession] {
        var result: [AdminSession] = []
        for session in core.liveSessions() { result.append(await session.adminInfo()) }
        return result
    }

    /// Every scope that exists (in memory or in the data directory), by name, without loading
    /// any. O(scopes), plus reading the log of a scope on disk whose file name is hashed.
    func scopes() async -> [AdminScope] {
        let (names, files) = core.existingScopeNames()
        var result: [AdminScope] = []
        for name in names {
            guard let scope = core.scopeInMemory(named: name) else {
                result.append(AdminScope(name: name, isLoaded: false, objects: nil, subscribers: 0))
                continue
            }
            let objects = await scope.loadedObjectCount
            result.append(AdminScope(name: name, isLoaded: objects != nil, objects: objects, subscribers: await scope.subscriberCount))
        }
        for file in files {
            guard let name = await storedScopeName(file: file) else { continue }
            result.append(AdminScope(name: name, isLoaded: false, objects: nil, subscribers: 0))
        }
        return result.sorted { $0.name < $1.name }
    }

    /// Ends the session numbered `number` (``AdminSession/number``): its connection is closed with
    /// 4097 `session-revoked` and it cannot resume; its client may open a new session, which the
    /// server's authentication decides. ``revoke(user:)`` ends all of a user's.
    func endSession(number: Int) async throws(AdminError) {
        guard let session = core.liveSessions().first(where: { $0.number == number }) else { throw .unknownSession(number) }
        await session.expire(reason: WireErrorBody(message: "Session ended by an administrator", type: WireErrorBody.sessionRevoked.type))
    }

    /// The scope's state, `{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}` (the shape
    /// of `Scope.stateJSON()`), which ``importScope(_:state:)`` takes. O(objects).
    func exportScope(_ name: String) async throws(AdminError) -> JSON {
        if let problem = ScopeName.problem(with: name) { throw .invalidScopeName(name: name, reason: problem.message) }
        guard let state = await core.existingScope(named: name)?.stateJSON() else { throw .unknownScope(name) }
        return state
    }

    /// Makes the scope's state `state` (an export, of this scope or another): one atomic change set
    /// against its current state, validated, logged and broadcast like a client's (every
    /// subscribed session sees it), the import's root becoming the scope's root. A scope that
    /// does not exist is created, as a client's first write would create it. Returns how many
    /// fragments it took (0: the scope held that state already).
    /// - Throws: ``AdminError/invalidState(_:)`` for a body of another shape,
    ///   ``AdminError/importRejected(_:)`` when the scope refuses it (nothing changes).
    func importScope(_ name: String, state: JSON) async throws(AdminError) -> Int {
        if let problem = ScopeName.problem(with: name) { throw .invalidScopeName(name: name, reason: problem.message) }
        let scope: any HostedScope
        switch core.holdScope(named: name) {
        case .stopped: throw .stopped
        case .refused(let error): throw error.type == WireErrorBody.scopeNotFound.type ? .unknownScope(name) : .importRejected([error.message])
        case .scope(let held): scope = held
        }
        defer { core.releaseScope(named: name) }
        let current = await scope.stateJSON().flatMap(ScopeStore.init(snapshot:))
            ?? ScopeStore(rootUUID: ScopeName.unwrittenRootUUID(of: name))
        let fragments = try ScopeImport.fragments(importing: state, over: current)
        guard !fragments.isEmpty else { return 0 }
        let errors = try await ScopeImport.apply(fragments, to: scope)
        guard errors.isEmpty else { throw .importRejected(errors) }
        core.log.write("admin.scope_imported", scope: name, "scope '\(name)': imported by an administrator (\(fragments.count) fragments)")
        return fragments.count
    }

    /// Replaces the scope's log with one snapshot record now (what the server does by itself once
    /// a log grows to four times its last compacted size). O(objects).
    func compactScope(_ name: String) async throws(AdminError) -> CompactionReport {
        if let problem = ScopeName.problem(with: name) { throw .invalidScopeName(name: name, reason: problem.message) }
        guard core.logWriter != nil else { throw core.cluster == nil ? .noDataDirectory : .unsupportedInCluster }
        guard let scope = core.existingScope(named: name) else { throw core.isStopped ? .stopped : .unknownScope(name) }
        return try await scope.compactNow()
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
    ///   log fails the backup: none is written without it).
    func backup(to directory: URL) async throws(AdminError) -> BackupReport {
        guard !core.isStopped else { throw .stopped }
        guard core.cluster == nil else { throw .unsupportedInCluster }
        guard let writer = core.logWriter else { throw .noDataDirectory }
        let created = Date()
        if let failure = await writer.perform({ onWriter in onWriter ? ScopeBackup.create(directory) : .stopped }) { throw failure }
        let (names, files) = core.existingScopeNames()
        var all = names
        for file in files {
            guard let name = await storedScopeName(file: file) else { throw .storage("cannot read the scope name of \(file)") }
            all.append(name)
        }
        var entries: [BackupReport.Entry] = []
        for name in all.sorted() {
            guard let scope = core.existingScope(named: name) else { throw .stopped }
            if let entry = try await scope.backup(into: directory) { entries.append(entry) }
        }
        let report = BackupReport(directory: directory, created: created, scopes: entries)
        if let failure = await writer.perform({ onWriter in onWriter ? ScopeBackup.writeManifest(report) : .stopped }) { throw failure }
        core.log.write("admin.backup_written", "backup of \(entries.count) scope(s) written to \(directory.path(percentEncoded: false))")
        return report
    }

    /// The scope's history after `since` (§8.26). O(history size), read on the log writer thread.
    func history(of name: String, since: HistoryPoint?) async throws(AdminError) -> ScopeHistory {
        try await historyScope(name).history(since: since)
    }

    /// The scope's state after `point` (the shape of ``exportScope(_:)``) and the sequence number
    /// it stands for. O(the size of the history file that holds it).
    func scopeState(_ name: String, at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, state: JSON) {
        let (sequence, store) = try await historyScope(name).state(at: point)
        return (sequence, store.stateJSON())
    }

    /// Brings the scope back to its state after `point` as one new atomic change set, applied
    /// through the scope's own path (validated, logged as `identity`'s, broadcast to every
    /// subscribed session): nothing in the history is rewritten. Objects created since leave the
    /// tree, objects deleted since come back with their values at `point`. Returns the sequence
    /// number restored and how many fragments it took (0: the scope was in that state).
    func restoreScope(_ name: String, to point: HistoryPoint, identity: SessionIdentity) async throws(AdminError) -> (sequence: Int, fragments: Int) {
        let scope = try historyScope(name)
        let (sequence, past) = try await scope.state(at: point)
        guard past.objects[past.rootUUID]?.className.isEmpty == false else {
            throw .historyUnavailable("the scope had no root object after change set \(sequence) (it was empty): restore to a later point")
        }
        guard case .scope(let held) = core.holdScope(named: name) else { throw core.isStopped ? .stopped : .unknownScope(name) }
        defer { core.releaseScope(named: name) }
        guard let current = await held.stateJSON().flatMap(ScopeStore.init(snapshot:)) else { throw .unknownScope(name) }
        var fragments = try ScopeImport.fragments(importing: past.stateJSON(), over: current)
        guard !fragments.isEmpty else { return (sequence, 0) }
        // An object deleted since comes back as the scope last had it (§8.4): a change after its
        // `add`, in the same change set, sets it to its values at `point`.
        for fragment in fragments where fragment.kind == .add {
            fragments.append(SyncFragment(kind: .change, uuid: fragment.uuid, className: fragment.className, properties: fragment.properties))
        }
        let errors = try await ScopeImport.apply(fragments, to: held, identity: identity, origin: #"{"admin":"restore"}"#)
        guard errors.isEmpty else { throw .importRejected(errors) }
        core.log.write("admin.scope_restored", scope: name, "scope '\(name)': restored to change set \(sequence) by an administrator (\(fragments.count) fragments)")
        return (sequence, fragments.count)
    }

    /// Names the scope's current state `label`, marked by `user` (§8.26).
    func markRevision(_ label: String, scope name: String, user: String) async throws(AdminError) -> ScopeRevision {
        try await historyScope(name).markRevision(label, user: user)
    }

    /// The scope whose history is asked for: refused in memory (a cluster's is in JetStream).
    private func historyScope(_ name: String) throws(AdminError) -> any HostedScope {
        if let problem = ScopeName.problem(with: name) { throw .invalidScopeName(name: name, reason: problem.message) }
        guard core.logWriter != nil || core.cluster != nil else { throw .noDataDirectory }
        guard let scope = core.clusterScope(named: name) ?? core.existingScope(named: name) else { throw core.isStopped ? .stopped : .unknownScope(name) }
        return scope
    }

    /// Ends every session of `user` (``ContrailServer/revoke(user:)``); how many. O(sessions).
    func revoke(user: String) async -> Int {
        let count = await core.revoke(user: user)
        core.log.write("user.revoked", "revoked user '\(user)': \(count) session(s) ended")
        return count
    }

    /// The name of the scope stored in `file` of the data directory: from the file name, or (a
    /// hashed one) from its log, read on the writer thread.
    private func storedScopeName(file: String) async -> String? {
        if let name = ScopeFileName.name(fromFileName: file) { return name }
        guard let writer = core.logWriter, let directory = core.options.dataDirectory else { return nil }
        let url = directory.appending(path: file, directoryHint: .notDirectory)
        return await writer.perform { onWriter in onWriter ? ScopeBackup.storedName(of: url) : nil }
    }
}
