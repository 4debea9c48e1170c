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
/// A torn tail (a crash mid-write) is cut off and reported in `RestoreReport.tornTail`; damage in
/// the middle is a `FragmentLogError` naming the offset. Append failures (a full disk, say) are
/// kept in `lastError` and reported to `onError`; the change sets stay in memory.
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
    public let fsync: FsyncPolicy
    /// When the file grows past this many bytes, `compact()` runs on its own after an append.
    public var compactionThreshold: Int
    /// The last append or compaction error, if any.
    public private(set) var lastError: FragmentLogError?
    /// Called with every append or compaction error.
    public var onError: ((FragmentLogError) -> Void)?

    private var file: LogFile?
    private weak var scope: Scope?
    private var token: ObservationToken?
    /// Local change sets still syncing, by sequence number: kept through compaction, and handed
    /// back to the scope on restore so the sync layer sends them again.
    private var unsettled: [Int: Decoded] = [:]
    private var nextSequence = 1

    public init(url: URL, fsync: FsyncPolicy = .everyRecord, compactionThreshold: Int = 64 << 20) {
        self.url = url
        self.fsync = fsync
        self.compactionThreshold = compactionThreshold
    }

    /// Opens the file, restores `scope` from it (creating the root from the log when the scope has
    /// none, or giving the existing root the logged identity), then appends every change set the
    /// scope makes. A new file starts with a snapshot of the scope as it is.
    @discardableResult
    public func attach(to scope: Scope) throws(FragmentLogError) -> RestoreReport {
        let opened: (LogFile, LogRecovery)
        do { opened = try LogFile.open(at: url, fsync: fsync) } catch { throw .file(error) }
        let (file, recovery) = opened
        var report = RestoreReport(records: 0, tornTail: recovery.truncatedTail)
        var restored: [Int: ChangeSet] = [:]
        do {
            for record in recovery.records {
                try restore(record, into: scope, pending: &restored)
                report.records += 1
            }
        } catch {
            try? file.close()
            unsettled.removeAll()
            scope.restoredPending.removeAll { changeSet in restored.values.contains { $0 === changeSet } }
            throw error
        }
        self.file = file
        self.scope = scope
        for (sequence, changeSet) in restored {
            watch(changeSet, sequence: sequence)
        }
        report.pendingChangeSets = restored.count
        if recovery.records.isEmpty, scope.root != nil { compactNow() }
        token = scope.onChanges(self) { [weak self] changeSet in self?.record(changeSet) }
        return report
    }

    /// Returns once every record appended so far is on disk (synced), or throws the error that
    /// kept one from getting there.
    public func waitUntilDurable() async throws(FragmentLogError) {
        guard let file else { throw .notAttached }
        do { try file.sync() } catch { throw .file(error) }
    }

    /// Stops recording and closes the file.
    public func close() throws(FragmentLogError) {
        token?.cancel()
        token = nil
        defer { file = nil }
        do { try file?.close() } catch { throw .file(error) }
    }

    /// Replaces the file's contents with one snapshot of the scope (temp file + rename, atomic).
    public func compact() throws(FragmentLogError) {
        guard let file, let scope else { throw .notAttached }
        let payload = Self.encode(Decoded(root: scope.root?.uuid, fragments: scope.snapshot()))
        let tail = unsettled.sorted { $0.key < $1.key }.map { sequence, pending in
            var kept = pending
            kept.sequence = sequence
            kept.isCompacted = true
            return (LogRecord.Kind.changeSet, Self.encode(kept))
        }
        do { try file.compact(snapshot: payload, keeping: tail) } catch { throw .file(error) }
    }

    /// The change sets in a log file, oldest first, with their messages (read-only).
    public static func history(at url: URL) throws(FragmentLogError) -> [(message: String?, origin: String, fragments: [SyncFragment])] {
        let recovery: LogRecovery
        do { recovery = try LogFile.read(at: url) } catch { throw .file(error) }
        var entries: [(message: String?, origin: String, fragments: [SyncFragment])] = []
        for record in recovery.records where record.kind == .changeSet {
            let decoded = try decode(record)
            if decoded.settled == nil, !decoded.isCompacted { entries.append((decoded.message, decoded.origin, decoded.fragments)) }
        }
        return entries
    }

    // MARK: - Records

    /// Appends one change set (the attached scope's own are appended automatically; this is for
    /// change sets from elsewhere, such as another scope or a replay). Compacts past the threshold.
    public func append(_ changeSet: ChangeSet) throws(FragmentLogError) {
        guard let file, let scope else { throw .notAttached }
        var entry = Decoded(root: scope.root?.uuid, fragments: changeSet.fragments, message: changeSet.message,
                            origin: changeSet.origin.rawValue, isAtomic: changeSet.isAtomic)
        if changeSet.origin == .local, changeSet.state == .syncing {
            entry.sequence = nextSequence
            nextSequence += 1
        }
        do { _ = try file.append(.changeSet, Self.encode(entry)) } catch { throw .file(error) }
        if let sequence = entry.sequence {
            unsettled[sequence] = entry
            watch(changeSet, sequence: sequence)
        }
        if file.size > compactionThreshold { try compact() }
    }

    /// Once `changeSet` settles, a marker record says so (it will not be sent again after a restart).
    private func watch(_ changeSet: ChangeSet, sequence: Int) {
        changeSet.onStateChange { [weak self] state in
            guard state != .syncing, let self, self.unsettled.removeValue(forKey: sequence) != nil, let file = self.file else { return }
            var marker = Decoded(root: nil, fragments: [])
            marker.settled = sequence
            do throws(LogFileError) { _ = try file.append(.changeSet, Self.encode(marker)) } catch { self.report(.file(error)) }
        }
    }

    private func record(_ changeSet: ChangeSet) {
        do { try append(changeSet) } catch { report(error) }
    }

    private func compactNow() {
        do { try compact() } catch { report(error) }
    }

    private func report(_ error: FragmentLogError) {
        lastError = error
        onError?(error)
    }

    /// One record: `{"root", "fragments", "origin"?, "atomic"?, "message"?, "seq"?, "compacted"?, "settled"?}`.
    private struct Decoded {
        var root: UUID?
        var fragments: [SyncFragment]
        var message: String?
        var origin = "snapshot"
        var isAtomic = false
        /// Set on local change sets that were still syncing when written.
        var sequence: Int?
        /// A pending change set kept by compaction: its values are already in the snapshot.
        var isCompacted = false
        /// A marker: the change set with this sequence number has settled.
        var settled: Int?
    }

    private static func encode(_ entry: Decoded) -> [UInt8] {
        var writer = JSONWriter(sortedKeys: false, capacity: 128 + entry.fragments.count * 160)
        writer.append("{")
        writer.writeKey("fragments", first: true)
        SyncFragment.write(entry.fragments, into: &writer)
        writer.writeKey("root")
        writer.write(entry.root.map { .string($0.uuidString.lowercased()) } ?? .null)
        if entry.origin != "snapshot" {
            writer.writeKey("origin")
            writer.writeString(entry.origin)
            writer.writeKey("atomic")
            writer.write(.bool(entry.isAtomic))
        }
        if let message = entry.message {
            writer.writeKey("message")
            writer.writeString(message)
        }
        if let sequence = entry.sequence {
            writer.writeKey("seq")
            writer.write(.int(Int64(sequence)))
        }
        if entry.isCompacted {
            writer.writeKey("compacted")
            writer.write(.bool(true))
        }
        if let settled = entry.settled {
            writer.writeKey("settled")
            writer.write(.int(Int64(settled)))
        }
        writer.append("}")
        return writer.bytes
    }

    private static func decode(_ record: LogRecord) throws(FragmentLogError) -> Decoded {
        let json: JSON
        do { json = try JSON(parsing: record.payload) } catch {
            throw .badRecord(offset: record.offset, reason: "\(error)")
        }
        guard case .array(let items)? = json["fragments"] else {
            throw .badRecord(offset: record.offset, reason: "no fragments")
        }
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(items.count)
        for item in items {
            do { fragments.append(try SyncFragment(json: item)) } catch {
                throw .badRecord(offset: record.offset, reason: "\(error)")
            }
        }
        var entry = Decoded(root: json["root"]?.stringValue.flatMap(UUID.init(uuidString:)), fragments: fragments,
                            message: json["message"]?.stringValue, origin: json["origin"]?.stringValue ?? "snapshot",
                            isAtomic: json["atomic"]?.boolValue ?? false)
        entry.sequence = json["seq"]?.int64Value.map(Int.init)
        entry.isCompacted = json["compacted"]?.boolValue ?? false
        entry.settled = json["settled"]?.int64Value.map(Int.init)
        return entry
    }

    /// Applies one record. A local change set that was still syncing is restored as made and kept in
    /// `pending` by sequence number until a later settle marker (if any) takes it out again.
    private func restore(_ record: LogRecord, into scope: Scope, pending: inout [Int: ChangeSet]) throws(FragmentLogError) {
        let decoded = try Self.decode(record)
        if let settled = decoded.settled {
            unsettled[settled] = nil
            if let changeSet = pending.removeValue(forKey: settled) {
                scope.restoredPending.removeAll { $0 === changeSet }
                changeSet.settle(.completed)
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
            if let sequence = decoded.sequence {
                unsettled[sequence] = decoded
                nextSequence = max(nextSequence, sequence + 1)
                pending[sequence] = try scope.restorePending(decoded.fragments, message: decoded.message,
                                                             isAtomic: decoded.isAtomic, isApplied: decoded.isCompacted)
            } else {
                try scope.apply(decoded.fragments)
            }
        } catch {
            throw .apply(offset: record.offset, error)
        }
    }
}
