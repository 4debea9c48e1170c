import Foundation

/// Persists a scope: every change set, local and remote, is appended to an append-only file of
/// checksummed records, and on start-up the scope is restored from it.
///
/// ```swift
/// let scope = Scope(name: "Canvas")
/// scope.root = Canvas()
/// let log = FragmentLog(url: documents.appending(path: "canvas.log"))
/// let restored = try log.attach(to: scope)      // restores what the file holds, then records
/// …
/// try log.compact()                              // snapshot + drop the history before it
/// ```
/// A torn tail (a crash mid-write: only a record that was never synced) is cut off and reported
/// in `RestoreReport.tornTail`; damage anywhere else (a record that was synced, any snapshot) is a
/// `FragmentLogError` naming the offset, the file is left untouched, and the scope then holds
/// what the records before it say. Append failures (a full disk, say) are kept in `lastError` and reported to
/// `onError`; the change sets stay in memory.
///
/// Crash-consistent on return: `modify` (any recorded change) appends the change set's record to
/// the file with one `write(2)` before it returns, so from then on a crash of the app, even a
/// SIGKILL, loses nothing. The main actor never waits on the disk: the log's own writer thread
/// syncs everything appended since its last sync at once (group commit). With
/// `FsyncPolicy.everyRecord` a change set is durable (survives a power loss too) once that sync
/// returns, typically within a millisecond of `modify`; `waitUntilDurable()` awaits it.
@MainActor
public final class FragmentLog {
    /// What `attach(to:)` found in the file.
    public struct RestoreReport: Sendable, Equatable {
        /// Change-set and snapshot records applied.
        public var records = 0
        /// The damaged end that was cut off, if the last write was interrupted.
        public var tornTail: TornTail?
        /// Local change sets the server had not acknowledged when the log was written; a sync
        /// client sends them again once it has fetched the scope.
        public var pendingChangeSets = 0
    }

    /// The file's location.
    public let url: URL
    /// When appended records are synced (on the log's own writer thread, one sync per batch).
    public let fsync: FsyncPolicy
    /// When the file grows past this many bytes, `compact()` runs on its own after an append.
    public var compactionThreshold: Int
    /// The last append or compaction error, if any.
    public private(set) var lastError: FragmentLogError?
    /// Called with every append or compaction error (on the main actor, soon after it happened).
    public var onError: ((FragmentLogError) -> Void)?

    private var writer: FragmentLogWriter?
    private weak var scope: Scope?
    private var token: ObservationToken?
    /// Local change sets still syncing, by sequence number: kept through compaction, and handed
    /// back to the scope on restore so the sync layer sends them again.
    private var unsettled: [Int: FragmentLogEntry] = [:]
    private var nextSequence = 1
    /// The collections the pending records restored so far wrote (used while attaching).
    private var restoreChain = CollectionEditChain()
    /// The collections the pending records appended since attaching (or since the last compaction)
    /// wrote: a collection whose base is its value is written as a chained edit.
    private var writtenChain = CollectionEditChain()
    /// The writer ticket of the last compaction queued (no second one until it has run).
    private var compactionTicket = 0
    /// The root UUID the records appended since attaching (or since the last compaction) last
    /// named: a pending record that names the same root leaves it out (a reader keeps the
    /// root it has). Nil: unknown, so the next record names it.
    private var writtenRoot: UUID?
    /// Sequence numbers of change sets that settled since the last settle marker: one marker names
    /// them all, written after the turn they settled in (a reply settles a batch of change sets at
    /// once), before `waitUntilDurable` waits, and at `close()`.
    private var settledUnwritten: [Int] = []

    /// A log at `url` (opened by `attach(to:)`), synced as `fsync` says and compacted when the file
    /// grows past `compactionThreshold` bytes.
    public init(url: URL, fsync: FsyncPolicy = .everyRecord, compactionThreshold: Int = 64 << 20) {
        self.url = url
        self.fsync = fsync
        self.compactionThreshold = compactionThreshold
    }

    /// Opens the file, restores `scope` from it (creating the root from the log when the scope has
    /// none, or giving the existing root the logged identity), then appends every change set the
    /// scope makes. A new file starts with a snapshot of the scope as it is. Reading and applying
    /// the file happen here, on the main actor: O(file size), in one pass over each record's bytes
    /// (`LogReplay`) for everything but the change sets still pending.
    @discardableResult
    public func attach(to scope: Scope) throws(FragmentLogError) -> RestoreReport {
        var report = RestoreReport()
        var restored: [Int: ChangeSet] = [:]
        var failure: FragmentLogError?
        let cache = LogReplayCache(scope: scope)
        // What a restore refused for a newer model version goes back to (nothing of it is applied).
        let before = scope.root.map { (uuid: $0.uuid, fragments: scope.snapshot()) }
        let opened: (LogFile, TornTail?)?
        do {
            // Records are applied as they are read; the writer thread syncs by `fsync` itself. The
            // file is preallocated ahead of the appends, which then never grow it (on ext4 a growing
            // write can wait behind the writer thread's sync; see LogWriter).
            opened = try LogFile.open(at: url, fsync: .never, preallocation: LogFile.appendPreallocation) { kind, offset, payload in
                guard failure == nil else { return }
                do throws(FragmentLogError) {
                    if let replay = try LogReplay.prepare(payload: payload, offset: offset, cache: cache) {
                        do throws(ModelError) { try replay.apply() } catch { throw .apply(offset: offset, error) }
                    } else {
                        try restore(FragmentLogEntry(kind: kind, payload: payload, offset: offset), at: offset, into: cache, pending: &restored)
                    }
                    report.records += 1
                } catch {
                    failure = error
                }
            }
        } catch {
            failure = .file(error)
            opened = nil
        }
        guard let (file, tornTail) = opened, failure == nil else {
            try? opened?.0.close()
            unsettled.removeAll()
            scope.unsettledRestored.removeAll { changeSet in restored.values.contains { $0 === changeSet } }
            // A log of a newer model version is not applied at all; other failures keep what the
            // records before them restored (the app decides, with the damage reported).
            if case .newerModel? = failure { scope.undoRestore(to: before) }
            throw failure ?? .notAttached
        }
        report.tornTail = tornTail
        writer = FragmentLogWriter(file: file, policy: fsync) { [weak self] error in
            Task { @MainActor in self?.report(error) }
        }
        self.scope = scope
        for (sequence, changeSet) in restored {
            watch(changeSet, sequence: sequence)
        }
        report.pendingChangeSets = restored.count
        if report.records == 0, scope.root != nil { compactNow() }
        token = scope.onChanges(self) { [weak self] changeSet in self?.record(changeSet) }
        scope.onBatchSent = { [weak self] id, changeSets in self?.recordBatch(id, changeSets) }
        return report
    }

    /// Where the records end in the file (its logical size: the file itself is longer, preallocated
    /// ahead of the appends); 0 before `attach(to:)`. For crash tests that watch the file.
    package var recordsEnd: Int { writer?.size.load(ordering: .relaxed) ?? 0 }

    /// A log dropped without `close()` still writes what is queued and closes its file (in the background).
    deinit { writer?.finish() }

    /// Returns once every record queued so far is on disk (synced, whatever the fsync policy), or
    /// throws the error that kept one from getting there. Suspends without blocking the main actor.
    public func waitUntilDurable() async throws(FragmentLogError) {
        guard let writer else { throw .notAttached }
        writeSettled()
        try await writer.waitUntilDurable()
    }

    /// Stops recording, writes what is queued, syncs (unless the policy is `FsyncPolicy.never`)
    /// and closes the file. This waits for the writer thread: call it when the app shuts down.
    /// What the log kept of pending change sets (for compaction) is let go.
    public func close() throws(FragmentLogError) {
        writeSettled()
        token?.cancel()
        token = nil
        scope?.onBatchSent = nil
        defer {
            writer = nil
            unsettled.removeAll()
            writtenChain = CollectionEditChain()
        }
        try writer?.close()
    }

    /// Queues a compaction: the file's contents are replaced by one snapshot of the scope, plus the
    /// change sets still pending (temp file + rename, atomic, on the writer thread). The snapshot is
    /// taken here, O(objects); errors go to `onError`.
    public func compact() throws(FragmentLogError) {
        guard let writer, let scope else { throw .notAttached }
        var snapshot = FragmentLogEntry(kind: .snapshot, root: scope.root?.uuid, fragments: scope.snapshot())
        snapshot.versions = scope.modelVersions(of: snapshot.fragments)
        var chain = CollectionEditChain()
        let tail = unsettled.sorted { $0.key < $1.key }.map { sequence, pending in
            var kept = pending
            kept.sequence = sequence
            kept.isCompacted = true
            (kept.fragments, kept.chained) = chain.chaining(pending.compact ?? CompactFragments(whole: pending.fragments), unchained: .whole)
            kept.compact = nil
            return kept
        }
        compactionTicket = writer.submit(.compact(snapshot: snapshot, tail: tail, position: writer.position()))
        writtenRoot = nil
        // The records from here on follow the tail in the new file but the old records if the
        // compaction fails: they chain only on what they themselves write.
        writtenChain = CollectionEditChain()
    }

    /// The change sets in a log file, oldest first, with their messages (read-only), each
    /// collection edit of a pending one back as the whole array (and its base). O(file size).
    public static func history(at url: URL) throws(FragmentLogError) -> [(message: String?, origin: String, fragments: [SyncFragment])] {
        var entries: [(message: String?, origin: String, fragments: [SyncFragment])] = []
        var failure: FragmentLogError?
        var chain = CollectionEditChain()
        // Every array of UUIDs the records applied so far hold, by object and key: the collections
        // a pending record's edits are edits of, as a restore finds them in its scope.
        var collections: [UUID: [String: [UUID]]] = [:]
        do {
            _ = try LogFile.forEachRecord(at: url) { kind, offset, payload in
                guard failure == nil else { return }
                do throws(FragmentLogError) {
                    var entry = try FragmentLogEntry(kind: kind, payload: payload, offset: offset)
                    if entry.sequence != nil {
                        do throws(CollectionEditChain.ChainError) {
                            entry.fragments = try chain.resolving(entry.fragments, chained: entry.chained) { collections[$0]?[$1] }
                        } catch {
                            throw .badRecord(offset: offset, reason: error.reason)
                        }
                    }
                    if !entry.isCompacted {
                        for fragment in entry.fragments {
                            for (key, value) in fragment.properties { if let elements = value.uuidElements { collections[fragment.uuid, default: [:]][key] = elements } }
                        }
                    }
                    guard kind == .changeSet else { return }
                    if entry.settled == nil, !entry.isCompacted { entries.append((entry.message, entry.origin, entry.fragments)) }
                } catch {
                    failure = error
                }
            }
        } catch {
            throw .file(error)
        }
        if let failure { throw failure }
        return entries
    }

    // MARK: - Records

    /// Appends one change set (the attached scope's own are appended automatically; this is for
    /// change sets from elsewhere, such as another scope or a replay). The record is encoded and
    /// written here, with one `write(2)`: when this returns it is in the operating system's hands
    /// and survives a crash of the app. The writer thread syncs it (group commit). Compacts past
    /// the threshold. O(size of the change set).
    public func append(_ changeSet: ChangeSet) throws(FragmentLogError) {
        guard let writer, let scope else { throw .notAttached }
        let stored = changeSet.stored
        let isPending = changeSet.origin == .local && changeSet.state == .syncing
        // A pending change set is written from its fragments as kept (collections as versions: no
        // whole array is rebuilt); any other whole.
        var entry = FragmentLogEntry(root: scope.root?.uuid, fragments: isPending ? stored.skeleton : changeSet.fragments,
                                     message: changeSet.message, origin: changeSet.origin.rawValue, isAtomic: changeSet.isAtomic)
        entry.versions = scope.modelVersions(of: stored.skeleton)
        if isPending {
            entry.changeSetID = changeSet.id
            entry.sequence = nextSequence
            nextSequence += 1
        }
        if let sequence = entry.sequence {
            // Kept as the change set keeps its fragments (a compaction rewrites it); written with
            // its collections as edits (§8.24), chained on the records before it where it can. The
            // chain moves on once it is written.
            var kept = entry
            kept.fragments = []
            kept.compact = stored
            unsettled[sequence] = kept
            changeSet.logSequence = sequence
            var written = entry
            var chain = writtenChain
            if !stored.collections.isEmpty || stored.skeleton.contains(where: { $0.bases != nil }) {
                (written.fragments, written.chained) = chain.chaining(stored, unchained: .edit)
            }
            if written.root != nil, written.root == writtenRoot { written.root = nil }
            try writer.append(written)
            writtenChain = chain
            writtenRoot = entry.root
            watch(changeSet, sequence: sequence)
        } else {
            try writer.append(entry)
            writtenRoot = entry.root
        }
        if writer.size.load(ordering: .relaxed) > compactionThreshold,
           writer.writtenTicket.load(ordering: .acquiring) >= compactionTicket {
            try compact()
        }
    }

    /// Once `changeSet` settles, a marker record says so (it will not be sent again after a restart):
    /// one marker for every change set that settled in the same turn. Until it is written, a
    /// restart sends the change set again, and the server answers it as a repeat (§8.11).
    private func watch(_ changeSet: ChangeSet, sequence: Int) {
        changeSet.onStateChange(self) { [weak self] state in
            guard state != .syncing, let self, self.unsettled.removeValue(forKey: sequence) != nil, self.writer != nil else { return }
            self.settledUnwritten.append(sequence)
            guard self.settledUnwritten.count == 1 else { return }
            Task { @MainActor [weak self] in self?.writeSettled() }
        }
    }

    /// Writes one marker naming every change set settled since the last one. O(those change sets).
    private func writeSettled() {
        guard !settledUnwritten.isEmpty, let writer else { return }
        var marker = FragmentLogEntry(root: nil, fragments: [])
        marker.settled = FragmentLogEntry.ranges(of: settledUnwritten)
        settledUnwritten.removeAll()
        do throws(FragmentLogError) { try writer.append(marker) } catch { report(error) }
    }

    private func record(_ changeSet: ChangeSet) {
        do { try append(changeSet) } catch { report(error) }
    }

    /// Records that `changeSets` were first sent together under `id` (or one alone under its own
    /// id): a marker naming their sequence numbers, written before the message leaves. Keeps the id
    /// with each pending record so a compaction carries it. O(change sets).
    private func recordBatch(_ id: UUID, _ changeSets: [ChangeSet]) {
        guard let writer else { return }
        let members = changeSets.compactMap { changeSet in changeSet.logSequence.flatMap { unsettled[$0] != nil ? $0 : nil } }
        guard !members.isEmpty else { return }
        for sequence in members { unsettled[sequence]?.batch = id }
        var marker = FragmentLogEntry(root: nil, fragments: [])
        marker.batch = id
        marker.members = members
        do throws(FragmentLogError) { try writer.append(marker) } catch { report(error) }
    }

    private func compactNow() {
        do { try compact() } catch { report(error) }
    }

    private func report(_ error: FragmentLogError) {
        lastError = error
        onError?(error)
    }

    /// Applies one record. A local change set that was still syncing is restored as made and kept in
    /// `pending` by sequence number until a later settle marker (if any) takes it out again.
    private func restore(_ decoded: FragmentLogEntry, at offset: Int, into cache: LogReplayCache, pending: inout [Int: ChangeSet]) throws(FragmentLogError) {
        let scope = cache.scope
        if let batch = decoded.batch, let members = decoded.members {
            for sequence in members {
                unsettled[sequence]?.batch = batch
                pending[sequence]?.sentBatch = batch
            }
            return
        }
        if let settled = decoded.settled {
            // A range longer than what is pending is matched against what is pending.
            let sequences = settled.flatMap { range in range.count <= unsettled.count ? Array(range) : unsettled.keys.filter(range.contains) }
            var taken: Set<ObjectIdentifier> = []
            for sequence in sequences {
                unsettled[sequence] = nil
                if let changeSet = pending.removeValue(forKey: sequence) {
                    taken.insert(ObjectIdentifier(changeSet))
                    changeSet.settle(.completed)
                }
            }
            if !taken.isEmpty { scope.unsettledRestored.removeAll { taken.contains(ObjectIdentifier($0)) } }
            return
        }
        if let newer = scope.newerModel(in: decoded.versions) {
            throw .newerModel(className: newer.className, version: newer.version, supported: newer.supported)
        }
        guard decoded.sequence != nil else {
            // A record in the older layout (fragments before root): replayed as the current layout;
            // one the one-pass restore leaves alone (unknown classes or properties, an older model
            // version) is applied as remote fragments.
            let replay = try decoded.encoded().withUnsafeBytes { bytes in
                Result { () throws(FragmentLogError) in try LogReplay.prepare(payload: bytes, offset: offset, cache: cache) }
            }.get()
            do throws(ModelError) {
                if let replay {
                    try replay.apply()
                } else {
                    try scope.restoreRecord(root: decoded.root, fragments: decoded.fragments, versions: decoded.versions)
                }
            } catch {
                throw .apply(offset: offset, error)
            }
            return
        }
        do {
            if let rootUUID = decoded.root {
                if scope.root == nil, let fragment = decoded.fragments.first(where: { $0.uuid == rootUUID }) {
                    scope.root = try ModelRegistry.make(className: fragment.className, uuid: rootUUID)
                } else {
                    scope.adoptRootUUID(rootUUID)
                }
            }
        } catch {
            throw .apply(offset: offset, error)
        }
        var decoded = decoded
        // A live record's chained edits of collections the scope holds as the chain does are
        // applied to the typed collections (no whole array per record); a compacted record's
        // values are the snapshot's, and a migration rewrites wire values: those go whole.
        let isTyped = !decoded.isCompacted && !ModelRegistry.hasModelVersions
        var typed: [ChainedCollectionEdit] = []
        do throws(CollectionEditChain.ChainError) {
            (decoded.fragments, typed) = try restoreChain.resolving(decoded.fragments, chained: decoded.chained,
                                                                    current: { scope.collectionElements($0, $1) },
                                                                    typed: isTyped ? { scope.collectionModels($0, $1) } : nil)
        } catch {
            throw .badRecord(offset: offset, reason: error.reason)
        }
        decoded.chained = []
        do {
            if let sequence = decoded.sequence {
                unsettled[sequence] = decoded
                nextSequence = max(nextSequence, sequence + 1)
                let migrated = scope.migrated(decoded.fragments, versions: decoded.versions)
                pending[sequence] = try scope.restorePending(migrated, typed: &typed, message: decoded.message, isAtomic: decoded.isAtomic,
                                                             isApplied: decoded.isCompacted, id: decoded.changeSetID ?? UUID())
                if isTyped { restoreChain.adopt(typed: typed) { scope.collectionModels($0, $1) } }
                pending[sequence]?.sentBatch = decoded.batch
                pending[sequence]?.logSequence = sequence
                // Kept as the change set keeps them when that is what the record says (no migration:
                // the change set keeps exactly the fragments it was given).
                if let restored = pending[sequence], !ModelRegistry.hasModelVersions || migrated == decoded.fragments {
                    unsettled[sequence]?.fragments = []
                    unsettled[sequence]?.compact = restored.stored
                }
            }
        } catch {
            throw .apply(offset: offset, error)
        }
    }
}
