import ContrailSupport
import ContrailWire
import Foundation

/// A scope of a server alone (``HostedScope``): an actor holding its schema-agnostic state, the
/// sessions subscribed to it (its ``ScopeCore``), and its log in the data directory. Change sets are
/// applied one at a time in arrival order (one total order per scope); broadcasts go straight into
/// the subscribers' outboxes, so every session sees them in that order.
///
/// A scope that does not exist yet (``ScopeCreation/write``) holds only its subscribers and the
/// empty state it answers fetches with (no slot, no file); its first accepted write creates it
/// (asking the server, within ``ServerOptions/maxScopes``) on the same root, and its subscribers
/// get that write's broadcast like any other.
///
/// Loading takes one of the server's ``ScopeSlots``. With a data directory, a scope unused for
/// `idleTimeout` snapshots its state, closes its log file, leaves memory and gives its slot back;
/// the next fetch or sync reloads it (its subscriptions stay).
actor LocalScope: HostedScope {
    /// The scope's name.
    nonisolated let name: String
    private let limits: ServerLimits
    private let dataDirectory: URL?
    /// Does the disk I/O; nil for a server in memory.
    private let writer: ScopeLogWriter?
    private let log: ServerLog
    private let declaredRoot: ScopeRoot?
    /// The subscribers and what to queue for them.
    private var core: ScopeCore
    /// The state, while loaded.
    private var store: ScopeStore?
    private var persistence: ScopePersistence?
    /// The log being opened, which later callers wait for too.
    private var loading: Task<Result<ScopePersistence.Opened, ServerError>, Never>?
    /// Bytes in the log, and in it after the last compaction (compaction is due at 4×).
    private var logBytes = 0
    private var compactedBytes = 0
    /// Set by ``close()``: the scope no longer loads or accepts anything.
    private var isClosed = false
    private let slots: ScopeSlots
    /// Whether this scope holds one of `slots` (from loading until it unloads or closes).
    private var holdsSlot = false
    private let idleTimeout: Duration
    private let clock: ElapsedClock
    private var lastUse: ElapsedClock.Instant
    private var idleTask: Task<Void, Never>?
    /// Whether the scope exists; until it does, fetches get ``unwritten`` and nothing is stored.
    private var exists: Bool
    /// The state of the scope before it exists: empty, on the root it will be created with.
    private var unwritten: ScopeStore?
    /// Asks the server to record that the scope now exists; an error when it may not.
    private let create: @Sendable () -> WireErrorBody?
    /// Syncs run one at a time in arrival order: the ticket of the next to arrive, the one whose
    /// turn it is, and the ones waiting for theirs.
    private var nextSyncTicket = 0
    private var syncTurn = 0
    private var syncWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    /// The time stamped on each accepted change set and revision (§8.26).
    private let wallClock: @Sendable () -> Date

    init(name: String, limits: ServerLimits, dataDirectory: URL?, writer: ScopeLogWriter?, slots: ScopeSlots,
         idleTimeout: Duration, clock: ElapsedClock, log: ServerLog, procedures: [ServerProcedure] = [], root: ScopeRoot? = nil,
         exists: Bool = true, metrics: ServerMetrics? = nil, wallClock: @escaping @Sendable () -> Date = { Date() },
         create: @escaping @Sendable () -> WireErrorBody? = { nil }) {
        self.wallClock = wallClock
        self.exists = exists
        self.create = create
        self.declaredRoot = root
        self.name = name
        self.limits = limits
        self.dataDirectory = writer == nil ? nil : dataDirectory
        self.writer = writer
        self.slots = slots
        self.idleTimeout = idleTimeout
        self.clock = clock
        self.lastUse = clock.now
        self.log = log
        self.core = ScopeCore(name: name, limits: limits, procedures: procedures, metrics: metrics, keepsRecentCollections: true)
    }

    /// Takes a slot for loading, unless this scope holds one already.
    private func takeSlot() throws(ServerError) {
        if holdsSlot { return }
        guard slots.take() else { throw ServerError.tooManyOpenScopes(limit: slots.limit) }
        holdsSlot = true
    }

    private func giveSlot() {
        if holdsSlot { slots.give() }
        holdsSlot = false
    }

    /// The store, loaded from the data directory (on the writer thread) on first use.
    private func loadedStore() async throws(ServerError) -> ScopeStore {
        lastUse = clock.now
        if let store { return store }
        if isClosed { throw ServerError.stopped }
        try takeSlot()
        let root = unwritten?.rootUUID ?? UUID()
        guard let writer, let dataDirectory else {
            let fresh = unwritten ?? seeded(ScopeStore(rootUUID: root))
            store = fresh
            unwritten = nil
            return fresh
        }
        let task: Task<Result<ScopePersistence.Opened, ServerError>, Never>
        if let loading {
            task = loading
        } else {
            let name = self.name
            task = Task {
                do throws(ServerError) {
                    return .success(try await writer.open(directory: dataDirectory, name: name, root: root))
                } catch { return .failure(error) }
            }
            loading = task
        }
        let result = await task.value
        if let store { return store }  // an earlier waiter installed it
        if loading == task { loading = nil }
        let opened: ScopePersistence.Opened
        do throws(ServerError) { opened = try result.get() } catch {
            giveSlot()
            throw error
        }
        if isClosed {
            // `close()` waited for this load and closed what it opened.
            throw ServerError.stopped
        }
        persistence = opened.persistence
        let loaded = seeded(opened.store)
        store = loaded
        unwritten = nil
        logBytes = opened.size
        compactedBytes = opened.size
        log.write("scope.loaded", scope: name, "scope '\(name)': loaded \(opened.store.objectCount) objects")
        startIdleTimer()
        return loaded
    }

    /// Unloads the scope once it has been unused for `idleTimeout` (on the server's clock).
    private func startIdleTimer() {
        guard idleTask == nil else { return }
        let timeout = idleTimeout
        let clock = clock
        idleTask = Task { [weak self] in
            while let deadline = await self?.idleDeadline(timeout) {
                do { try await clock.sleep(until: deadline) } catch { return }
                if await self?.unloadIfIdle(timeout) != false { return }
            }
        }
    }

    private func idleDeadline(_ timeout: Duration) -> ElapsedClock.Instant { lastUse + timeout }

    /// Snapshots, closes the log and leaves memory if unused for `timeout`; returns whether it did.
    private func unloadIfIdle(_ timeout: Duration) async -> Bool {
        guard clock.now - lastUse >= timeout, loading == nil else { return false }
        idleTask = nil
        guard let persistence, let store, let writer else { return true }
        writer.compact(persistence, snapshot: store.snapshotJSON(name: name).serialized(), sequence: store.sequence)
        self.persistence = nil
        self.store = nil
        core.storeReplaced()
        giveSlot()
        await writer.close(persistence)
        log.write("scope.unloaded", scope: name, "scope '\(name)': unloaded after \(timeout) unused")
        return true
    }

    /// Runs `deliver` once everything this scope sent to the log before is durable: on the writer
    /// thread after the earlier appends, or at once for a scope in memory.
    private func afterEarlierWrites(_ deliver: @escaping @Sendable () -> Void) {
        if let writer, persistence != nil { writer.after(deliver) } else { deliver() }
    }

    /// `store` with the declared root's class and values when its root has no class yet (a new
    /// scope). Not logged: a restart seeds again, the same way.
    private func seeded(_ store: ScopeStore) -> ScopeStore {
        guard let declaredRoot, store.objects[store.rootUUID]?.className.isEmpty == true else { return store }
        var store = store
        _ = store.apply([declaredRoot.fragment(rootUUID: store.rootUUID)], atomic: true, maxObjects: limits.maxObjectsPerScope)
        return store
    }

    /// Subscribes a session (once, however often it fetches) and queues `ScopeFetchReply` then
    /// `ScopeState` into its outbox, with no broadcast in between.
    func fetch(outbox: SessionOutbox, scopeIndex: Int, replyTo: Int, chunks: Bool) async {
        if !exists {
            // Answered from memory: a fresh, empty state on the root the scope will be created with.
            let empty = unwritten ?? seeded(ScopeStore(rootUUID: ScopeName.unwrittenRootUUID(of: name)))
            unwritten = empty
            core.subscribe(outbox, scopeIndex: scopeIndex, replyTo: replyTo, store: empty, chunks: chunks)()
            return
        }
        let store: ScopeStore
        do {
            store = try await loadedStore()
        } catch {
            log.write("scope.error", level: .error, scope: name, "scope '\(name)': \(error)")
            let reason = if case .tooManyOpenScopes(let limit) = error {
                WireErrorBody.limitExceeded("Server holds the maximum of \(limit) open scopes; try again later")
            } else {
                WireErrorBody(message: "Scope could not be loaded")
            }
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo, error: reason))) }
            return
        }
        // At once, like the broadcasts it must precede: a state with change sets not yet durable is
        // what every subscriber is sent anyway (see ``sync(_:from:identity:received:)``).
        core.subscribe(outbox, scopeIndex: scopeIndex, replyTo: replyTo, store: store, chunks: chunks)()
    }

    /// Applies one `ScopeSync` from the session owning `outbox`, broadcasts what was accepted to
    /// every other subscribed session at once, and queues the reply held (``HeldReply``) until the
    /// change set's record is durable (see ``ScopeLogWriter``): a reader never waits for the disk,
    /// and the sender is told its change is safe only once it is. If the record cannot be written,
    /// the sender is told so and every subscriber's session ends (they were sent a change the scope
    /// no longer has), so their clients fetch the scope again. `received`: the fragments as the
    /// client sent them, when `message` holds dates converted to epoch seconds; the broadcast
    /// carries those values as received.
    func sync(_ message: ScopeSync, from outbox: SessionOutbox, identity: SessionIdentity, received: [SyncFragment]? = nil) async {
        // One at a time, in arrival order, also across the wait for the log to load: a session's
        // resent message may arrive (on a new connection) while its earlier one waits here, and the
        // waiters of one load would otherwise resume in any order.
        let ticket = nextSyncTicket
        nextSyncTicket += 1
        if ticket != syncTurn {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in syncWaiters[ticket] = continuation }
        }
        defer {
            syncTurn += 1
            syncWaiters.removeValue(forKey: syncTurn)?.resume()
        }
        await applyInTurn(message, from: outbox, identity: identity, received: received)
    }

    /// ``sync(_:from:identity:received:)`` in its turn.
    private func applyInTurn(_ message: ScopeSync, from outbox: SessionOutbox, identity: SessionIdentity, received: [SyncFragment]?) async {
        if !exists {
            guard createOnWrite(message, from: outbox, received: received) else { return }
        }
        if store == nil {
            let loaded: ScopeStore
            do throws(ServerError) { loaded = try await loadedStore() } catch {
                // A stopping server answers nothing: a rejection would make the client revert edits
                // that it resends, unchanged, to the next server.
                if case .stopped = error { return }
                let replies = Array(repeating: FragmentReply.rejected(.couldNotApplySyncMessage("scope could not be loaded")),
                                    count: message.fragments.count)
                outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: message.index, fragmentReplies: replies))) }
                return
            }
            store = consume loaded  // no other copy left: the store is mutated in place below, not copied
        } else {
            lastUse = clock.now  // as `loadedStore()` marks it
        }
        // With a log, the reply waits (held in its place) for the durability of the change set, or
        // for that of the earlier ones when nothing changed.
        let hold = writer != nil && persistence != nil ? HeldReply() : nil
        let changeSet = core.apply(message, to: &store!, from: outbox, identity: identity, received: received, hold: hold)
        let logged: [SyncFragment]
        switch changeSet {
        case .refused(let refusal):
            refusal()
            return
        case .unchanged(let reply):
            reply()
            if let hold { afterEarlierWrites { hold.release() } }
            return
        case .accepted(let accepted, let deliver):
            logged = accepted
            deliver()
        }
        let sequence = store!.advanceSequence()
        guard let writer, let persistence, let hold else { return }
        let payload = ScopePersistence.changeSetPayload(logged, changeSetID: message.changeSetID, sequence: sequence, time: wallClock(),
                                                        user: identity.user)
        let fragmentCount = message.fragments.count
        let replyTo = message.index
        writer.append(persistence, payload) { [self] error in
            guard let error else { hold.release(); return }
            // Not durable: not acknowledged; the scope reloads from disk, and the sessions that were
            // sent the change start over.
            let failed = Array(repeating: FragmentReply.rejected(WireErrorBody.couldNotApplySyncMessage("storage failed")), count: fragmentCount)
            hold.release { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: replyTo, fragmentReplies: failed))) }
            Task { await self.storageFailed(persistence, error) }
        }
        if let store { compactIfDue(persistence, store: store, appended: payload.count) }
    }

    /// The first write to a scope that does not exist: creates it (true: apply the write as usual)
    /// when the write would be accepted and the server has room; otherwise answers it on the empty
    /// state, storing nothing (false).
    private func createOnWrite(_ message: ScopeSync, from outbox: SessionOutbox, received: [SyncFragment]?) -> Bool {
        let empty = unwritten ?? seeded(ScopeStore(rootUUID: ScopeName.unwrittenRootUUID(of: name)))
        unwritten = empty
        var trial = empty
        let accepted = trial.apply(message.fragments, atomic: message.atomic == true, maxObjects: limits.maxObjectsPerScope,
                                   changeSetID: message.changeSetID).accepted
        if accepted.isEmpty {
            var scratch = empty
            switch core.apply(message, to: &scratch, from: outbox, received: received) {
            case .refused(let deliver), .unchanged(let deliver): deliver()
            case .accepted: break  // not reached: the same fragments on the same state were not accepted
            }
            return false
        }
        if let refusal = create() {
            log.write("scope.refused", level: .warning, scope: name, "scope '\(name)': not created: \(refusal.message)")
            let replies = Array(repeating: FragmentReply.rejected(refusal), count: message.fragments.count)
            outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: message.index, fragmentReplies: replies))) }
            return false
        }
        exists = true
        log.write("scope.created", scope: name, "scope '\(name)': created by its first write")
        return true
    }

    /// Snapshots the store into a fresh log once the log has grown to several times its last
    /// compacted size. The snapshot is encoded here (O(objects)); the writer does the I/O.
    private func compactIfDue(_ persistence: ScopePersistence, store: ScopeStore, appended: Int) {
        logBytes += appended + 13
        guard logBytes > max(1 << 20, compactedBytes * 4) else { return }
        compact(persistence, store: store)
    }

    /// Submits a compaction of the log to `store`'s snapshot.
    private func compact(_ persistence: ScopePersistence, store: ScopeStore) {
        guard let writer else { return }
        let snapshot = store.snapshotJSON(name: name).serialized()
        writer.compact(persistence, snapshot: snapshot, sequence: store.sequence)
        compactedBytes = snapshot.count + 29
        logBytes = compactedBytes
    }

    /// Compacts the log now (loading the scope if needed) and reports its size before and after,
    /// once the new log is in place. O(objects).
    func compactNow() async throws(AdminError) -> CompactionReport {
        guard exists else { throw .unknownScope(name) }
        guard let writer else { throw .noDataDirectory }
        let store: ScopeStore
        do throws(ServerError) { store = try await loadedStore() } catch {
            throw error == .stopped ? .stopped : .storage(error.description)
        }
        guard let persistence else { throw .storage("scope '\(name)' is not loaded") }
        let before = await writer.perform { onWriter in onWriter ? persistence.size : nil }
        compact(persistence, store: store)
        let after = await writer.perform { onWriter in onWriter ? persistence.size : nil }
        guard let before, let after else { throw .stopped }
        log.write("admin.scope_compacted", scope: name, "scope '\(name)': compacted by an administrator, \(before) → \(after) bytes")
        return CompactionReport(scope: name, bytesBefore: before, bytesAfter: after, objects: store.objectCount)
    }

    /// Writes the scope into `directory` (see ``HostedScope/backup(into:)``): from memory when
    /// loaded (the snapshot is taken here, between two change sets, and written once the writer
    /// has made every earlier record durable), otherwise from its log as the writer thread reads
    /// it (where a concurrent load would read it too, after). O(objects).
    func backup(into directory: URL) async throws(AdminError) -> BackupReport.Entry? {
        guard exists else { return nil }
        guard let writer, let dataDirectory else { throw .noDataDirectory }
        if isClosed { throw .stopped }
        if store == nil, loading != nil {
            // A load is under way: back up what it loads, in the scope's order.
            do throws(ServerError) { _ = try await loadedStore() } catch { throw .storage(error.description) }
        }
        let name = self.name
        let file = ScopeFileName.fileName(for: name)
        let target = directory.appending(path: file, directoryHint: .notDirectory)
        if let store, let persistence {
            let snapshot = store.snapshotJSON(name: name).serialized()
            let failure = await writer.perform { onWriter -> AdminError? in
                guard onWriter else { return .stopped }
                if let failed = persistence.failed { return .storage(failed.description) }
                return ScopeBackup.write(snapshot: snapshot, to: target)
            }
            if let failure { throw failure }
            return BackupReport.Entry(name: name, file: file, objects: store.objectCount)
        }
        let source = dataDirectory.appending(path: file, directoryHint: .notDirectory)
        let copied = await writer.perform { onWriter -> Result<Int?, AdminError> in
            guard onWriter else { return .failure(.stopped) }
            return ScopeBackup.copy(log: source, name: name, to: target)
        }
        return try copied.get().map { BackupReport.Entry(name: name, file: file, objects: $0) }
    }

    /// The scope's history (§8.26) after `since`, read on the writer thread once every earlier
    /// record is written: its log and, with a retention, its history segments. O(history read).
    func history(since: HistoryPoint?) async throws(AdminError) -> ScopeHistory {
        let name = self.name
        return try await onHistory { log, segments throws(AdminError) in
            try HistoryFiles.history(log: log, segments: segments, scope: name, since: since)
        }
    }

    /// The state after `point`, replayed from the history, and the sequence number it stands for.
    /// O(the size of the history file that holds it).
    func state(at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, store: ScopeStore) {
        let name = self.name
        return try await onHistory { log, segments throws(AdminError) in
            try HistoryFiles.state(log: log, segments: segments, scope: name, at: point)
        }
    }

    /// Runs `read` on the writer thread after the earlier writes, with the scope's log and whether
    /// its history segments count (only with a retention: segments an earlier run kept stay unread).
    private func onHistory<T: Sendable>(_ read: @escaping @Sendable (URL, Bool) throws(AdminError) -> T) async throws(AdminError) -> T {
        guard exists else { throw .unknownScope(name) }
        guard let writer, let dataDirectory else { throw .noDataDirectory }
        if isClosed { throw .stopped }
        let url = dataDirectory.appending(path: ScopeFileName.fileName(for: name), directoryHint: .notDirectory)
        let result = await writer.perform { onWriter -> Result<T, AdminError> in
            guard onWriter else { return .failure(.stopped) }
            return Result { () throws(AdminError) in try read(url, writer.history != nil) }
        }
        return try result.get()
    }

    /// Names the scope's current state `label` (§8.26) as `user`: logged, and durable before this
    /// returns. Throws ``AdminError/revisionExists(_:)`` for a label in use.
    func markRevision(_ label: String, user: String) async throws(AdminError) -> ScopeRevision {
        if let problem = ScopeRevision.problem(with: label) { throw .invalidRevision(problem) }
        guard exists else { throw .unknownScope(name) }
        guard let writer else { throw .noDataDirectory }
        do throws(ServerError) { _ = try await loadedStore() } catch {
            throw error == .stopped ? .stopped : .storage(error.description)
        }
        guard var store = self.store, let persistence else { throw .storage("scope '\(name)' is not loaded") }
        guard store.revision(label) == nil else { throw .revisionExists(label) }
        let revision = ScopeRevision(label: label, sequence: store.sequence, time: wallClock(), user: user)
        self.store = nil
        store.mark(revision)
        self.store = store
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<ServerError?, Never>) in
            writer.append(persistence, ScopePersistence.revisionPayload(revision)) { continuation.resume(returning: $0) }
        }
        if let failure {
            await storageFailed(persistence, failure)
            throw .storage(failure.description)
        }
        log.write("scope.revision_marked", scope: name, "scope '\(name)': revision '\(label)' marked at change set \(revision.sequence)")
        return revision
    }

    /// The object count while loaded; nil otherwise.
    var loadedObjectCount: Int? { store?.objectCount }

    /// A write or sync failed: drop the memory state (it holds changes that are not on disk) and
    /// close the log; the next use reloads what the disk has.
    private func storageFailed(_ failed: ScopePersistence, _ error: ServerError) async {
        guard persistence === failed else { return }
        log.write("scope.error", level: .error, scope: name, "scope '\(name)': \(error); ending the sessions subscribed to it")
        core.endSubscribers(.couldNotApplySyncMessage("scope '\(name)' could not store a change it had sent; start a new session and fetch it again"))
        persistence = nil
        store = nil
        core.storeReplaced()
        giveSlot()
        await writer?.close(failed)
    }

    /// Removes a session's subscription (expiry).
    func unsubscribe(_ outbox: SessionOutbox) async {
        core.unsubscribe(outbox)
    }

    /// Removes a session's subscription (`ScopeDetach`), then runs `done` once the broadcasts this
    /// scope already has on their way (waiting for their log writes) are in the session's outbox:
    /// nothing of this scope follows what `done` queues.
    func unsubscribe(_ outbox: SessionOutbox, then done: @escaping @Sendable () -> Void) async {
        core.unsubscribe(outbox)
        done()  // broadcasts are queued as change sets are applied: none of this scope follows
    }

    /// The state as `Scope.stateJSON()` shapes it; nil if it cannot be loaded.
    func stateJSON() async -> JSON? {
        guard exists else { return nil }
        return (try? await loadedStore())?.stateJSON()
    }

    /// The number of subscribed sessions.
    var subscriberCount: Int { core.subscriberCount }

    /// The number of objects (loading the scope if needed; 0 if it cannot be loaded). For the inspector page.
    var objectCount: Int {
        get async { exists ? (try? await loadedStore())?.objectCount ?? 0 : 0 }
    }

    /// Writes out and closes the log. A load under way is waited for and its log closed too: a
    /// server that stopped must hold no scope file, or a server started next on the same data would
    /// find the log locked and refuse the scope.
    func close() async {
        isClosed = true
        idleTask?.cancel()
        idleTask = nil
        giveSlot()
        if let loading, let writer {
            self.loading = nil
            if case .success(let opened) = await loading.value { await writer.close(opened.persistence) }
        }
        if let persistence, let writer {
            if let store { writer.compact(persistence, snapshot: store.snapshotJSON(name: name).serialized(), sequence: store.sequence) }
            self.persistence = nil
            await writer.close(persistence)
        }
        // A log still being opened (a first write or a fetch racing the stop) is closed here, before
        // the server's writer finishes: its waiter may resume only after that.
        if let loading, let writer, case .success(let opened) = await loading.value {
            await writer.close(opened.persistence)
        }
        store = nil
        core.unsubscribeAll()
    }
}
