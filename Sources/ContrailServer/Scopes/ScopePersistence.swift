import Contrail
import Foundation

/// A scope's log in the data directory: a snapshot record followed by one record per accepted
/// change set (its effective fragments). Reopening replays them; the log is compacted into a
/// fresh snapshot when it has grown well past the last one.
final class ScopePersistence {
    private let log: LogFile
    private let name: String
    private var compactedSize: Int

    private init(log: LogFile, name: String) {
        self.log = log
        self.name = name
        self.compactedSize = log.size
    }

    /// Opens (or creates) the log of scope `name` in `directory` and returns the restored store,
    /// or a new one when the log is empty.
    static func open(directory: URL, name: String, fsync: FsyncPolicy) throws(ServerError) -> (ScopePersistence, ScopeStore) {
        let url = directory.appending(path: ScopeFileName.fileName(for: name), directoryHint: .notDirectory)
        let log: LogFile
        let recovery: LogRecovery
        do {
            (log, recovery) = try LogFile.open(at: url, fsync: fsync)
        } catch {
            throw ServerError.persistence(scope: name, reason: error.description)
        }
        var store: ScopeStore?
        for record in recovery.records {
            let json: JSON
            do { json = try JSON(parsing: record.payload) } catch {
                throw ServerError.persistence(scope: name, reason: "record at offset \(record.offset) is not JSON: \(error)")
            }
            switch record.kind {
            case .snapshot:
                guard let restored = ScopeStore(snapshot: json) else {
                    throw ServerError.persistence(scope: name, reason: "snapshot at offset \(record.offset) is malformed")
                }
                store = restored
            case .changeSet:
                guard store != nil, case .array(let elements)? = json["fragments"] else {
                    throw ServerError.persistence(scope: name, reason: "change set at offset \(record.offset) is malformed")
                }
                var fragments: [SyncFragment] = []
                for element in elements {
                    guard let fragment = try? SyncFragment(json: element) else {
                        throw ServerError.persistence(scope: name, reason: "change set at offset \(record.offset) has a bad fragment")
                    }
                    fragments.append(fragment)
                }
                let id = json["changeSet"]?.stringValue.flatMap(UUID.init(wireString:))
                _ = store?.apply(fragments, atomic: false, maxObjects: .max, changeSetID: id)
            }
        }
        let persistence = ScopePersistence(log: log, name: name)
        if let store { return (persistence, store) }
        let fresh = ScopeStore()
        try persistence.compact(fresh)
        return (persistence, fresh)
    }

    /// Appends an accepted change set (with its id, for deduplication after a restart) and writes
    /// it out to the OS before returning.
    func append(_ fragments: [SyncFragment], changeSetID: UUID? = nil) throws(ServerError) {
        var payload = Array(#"{"fragments":"#.utf8) + SyncFragment.serialized(fragments)
        if let changeSetID { payload += Array(#","changeSet":""#.utf8) + Array(changeSetID.wireString.utf8) + [UInt8(ascii: "\"")] }
        payload.append(UInt8(ascii: "}"))
        do {
            try log.append(.changeSet, payload)
            try log.flush()
        } catch {
            throw ServerError.persistence(scope: name, reason: error.description)
        }
    }

    /// Replaces the log with a snapshot of `store` when it has grown to several times the last one.
    func compactIfNeeded(_ store: ScopeStore) throws(ServerError) {
        guard log.size > max(1 << 20, compactedSize * 4) else { return }
        try compact(store)
    }

    /// Replaces the log with a snapshot of `store`.
    func compact(_ store: ScopeStore) throws(ServerError) {
        do {
            try log.compact(snapshot: store.snapshotJSON(name: name).serialized())
            compactedSize = log.size
        } catch {
            throw ServerError.persistence(scope: name, reason: error.description)
        }
    }

    /// Writes out and closes the log.
    func close() {
        try? log.close()
    }
}
