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
        do {
            for record in recovery.records {
                try restore(record, into: scope)
                report.records += 1
            }
        } catch {
            try? file.close()
            throw error
        }
        self.file = file
        self.scope = scope
        if recovery.records.isEmpty, scope.root != nil { compactNow() }
        token = scope.onChanges(self) { [weak self] changeSet in self?.record(changeSet) }
        return report
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
        let payload = Self.encode(root: scope.root?.uuid, fragments: scope.snapshot(), changeSet: nil)
        do { try file.compact(snapshot: payload) } catch { throw .file(error) }
    }

    /// The change sets in a log file, oldest first, with their messages (read-only).
    public static func history(at url: URL) throws(FragmentLogError) -> [(message: String?, origin: String, fragments: [SyncFragment])] {
        let recovery: LogRecovery
        do { recovery = try LogFile.read(at: url) } catch { throw .file(error) }
        return try recovery.records.filter { $0.kind == .changeSet }.map { record throws(FragmentLogError) in
            let decoded = try decode(record)
            return (decoded.message, decoded.origin, decoded.fragments)
        }
    }

    // MARK: - Records

    /// Appends one change set (the attached scope's own are appended automatically; this is for
    /// change sets from elsewhere, such as another scope or a replay). Compacts past the threshold.
    public func append(_ changeSet: ChangeSet) throws(FragmentLogError) {
        guard let file, let scope else { throw .notAttached }
        let payload = Self.encode(root: scope.root?.uuid, fragments: changeSet.fragments, changeSet: changeSet)
        do { _ = try file.append(.changeSet, payload) } catch { throw .file(error) }
        if file.size > compactionThreshold { try compact() }
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

    private static func encode(root: UUID?, fragments: [SyncFragment], changeSet: ChangeSet?) -> [UInt8] {
        var object: [String: JSON] = [
            "fragments": .array(fragments.map(\.json)),
            "root": root.map { .string($0.uuidString.lowercased()) } ?? .null,
        ]
        if let changeSet {
            object["origin"] = .string(changeSet.origin.rawValue)
            object["atomic"] = .bool(changeSet.isAtomic)
            if let message = changeSet.message { object["message"] = .string(message) }
        }
        return JSON.object(object).serialized()
    }

    private struct Decoded {
        var root: UUID?
        var fragments: [SyncFragment]
        var message: String?
        var origin: String
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
        let root = json["root"]?.stringValue.flatMap(UUID.init(uuidString:))
        return Decoded(root: root, fragments: fragments, message: json["message"]?.stringValue,
                       origin: json["origin"]?.stringValue ?? "snapshot")
    }

    private func restore(_ record: LogRecord, into scope: Scope) throws(FragmentLogError) {
        let decoded = try Self.decode(record)
        do {
            if let rootUUID = decoded.root {
                if scope.root == nil, let fragment = decoded.fragments.first(where: { $0.uuid == rootUUID }) {
                    scope.root = try ModelRegistry.make(className: fragment.className, uuid: rootUUID)
                } else {
                    scope.adoptRootUUID(rootUUID)
                }
            }
            try scope.apply(decoded.fragments)
        } catch {
            throw .apply(offset: record.offset, error)
        }
    }
}
