import ContrailSupport
import ContrailWire
import Foundation

/// A scope's log in the data directory: a snapshot record followed by one record per accepted
/// change set (its effective fragments). Reopening replays them.
///
/// Only its ``ScopeLogWriter``'s thread calls its methods; scope actors hold it as a handle to
/// pass back to the writer. `@unchecked Sendable` invariant: every method runs on
/// `writer`'s thread (asserted in debug builds), so the `LogFile` is used by one thread only.
final class ScopePersistence: @unchecked Sendable {
    /// A log just opened and replayed.
    struct Opened: Sendable {
        let persistence: ScopePersistence
        let store: ScopeStore
        /// The log's size in bytes after opening.
        let size: Int
    }

    /// The scope's name.
    let name: String
    private let log: LogFile
    private unowned let writer: ScopeLogWriter
    private var lastSync = ContinuousClock.now
    /// The first write or sync failure: every later write fails too, so nothing is acknowledged
    /// on top of a change set that did not reach the disk.
    private var failure: ServerError?
    /// Set by the first ``close(sync:)``.
    private var isClosed = false
    /// The log's file.
    private let url: URL
    /// The sequence number of the log's snapshot (the state after that change set).
    private var baseSequence: Int

    private init(log: LogFile, name: String, writer: ScopeLogWriter, url: URL, baseSequence: Int) {
        self.log = log
        self.name = name
        self.writer = writer
        self.url = url
        self.baseSequence = baseSequence
    }

    /// Opens (or creates) the log of scope `name` in `directory` and replays it (cutting a torn
    /// tail, which it logs); a new log gets a snapshot of a fresh store with root `root`. A log
    /// whose snapshot names another scope is refused (``ServerError/scopeFileMismatch(scope:recorded:)``).
    /// O(log size).
    static func open(directory: URL, name: String, root: UUID = UUID(), log serverLog: ServerLog,
                     writer: ScopeLogWriter) throws(ServerError) -> Opened {
        let url = directory.appending(path: ScopeFileName.fileName(for: name), directoryHint: .notDirectory)
        if !FileManager.default.fileExists(atPath: url.path(percentEncoded: false)), let setAside = setAsideFiles(of: url).last {
            // Not a new scope: its log was set aside as damaged. Refuse until an operator decides.
            throw ServerError.persistence(scope: name, reason: "its log was set aside as damaged (\(setAside)); "
                + "see `contrail log verify` on it, put a repaired log in place as \(url.lastPathComponent) or delete the damaged file to start the scope over")
        }
        let log: LogFile
        let recovery: LogRecovery
        do {
            // The writer decides when to sync; the log itself never does.
            (log, recovery) = try LogFile.open(at: url, fsync: .never)
        } catch {
            switch error {
            case .corruptRecord, .badHeader:
                throw setAside(url, name: name, log: serverLog, because: error)
            default:
                throw ServerError.persistence(scope: name, reason: error.description)
            }
        }
        if let tail = recovery.truncatedTail {
            serverLog.write("scope.torn_tail", level: .warning, scope: name, "scope '\(name)': cut a torn tail of \(tail.discardedBytes) bytes at offset \(tail.offset) (\(tail.reason))")
        }
        var store: ScopeStore?
        let base: Int
        do throws(ServerError) {
            (store, _, base) = try replay(recovery.records, name: name)
            // Rows grown by the replay's appends keep no spare capacity.
            store?.shrinkToFit()
        } catch {
            try? log.close()
            throw error
        }
        let persistence = ScopePersistence(log: log, name: name, writer: writer, url: url, baseSequence: base)
        // Replaying a big log read its records and parsed them into JSON trees, all gone once the
        // records are: their pages go back to the system rather than stay resident beside the store.
        _ = consume recovery
        if (store?.objectCount ?? 0) >= releaseAfterObjects { Platform.releaseFreeMemory() }
        if let store { return Opened(persistence: persistence, store: store, size: log.size) }
        let fresh = ScopeStore(rootUUID: root)
        try persistence.compact(snapshot: fresh.snapshotJSON(name: name).serialized(), sequence: 0)
        return Opened(persistence: persistence, store: fresh, size: log.size)
    }

    /// The objects from which a loaded scope's replay returns the allocator's free pages to the system.
    static let releaseAfterObjects = 10_000

    /// The state a log's records replay to (nil: no snapshot record), the scope name its
    /// snapshot records and the snapshot's sequence number. `name` nil: any name (a file read by
    /// name-less tools: backups, restores, history). O(log size).
    static func replay(_ records: [LogRecord], name: String?) throws(ServerError) -> (store: ScopeStore?, name: String?, base: Int) {
        var store: ScopeStore?
        var recordedName: String?
        var base = 0
        for record in records {
            let json: JSON
            do { json = try JSON(parsing: record.payload) } catch {
                throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "record at offset \(record.offset) is not JSON: \(error)")
            }
            switch record.kind {
            case .snapshot:
                if case .string(let recorded)? = json["name"] {
                    if let name, recorded != name { throw ServerError.scopeFileMismatch(scope: name, recorded: recorded) }
                    recordedName = recorded
                }
                guard let restored = ScopeStore(snapshot: json) else {
                    throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "snapshot at offset \(record.offset) is malformed")
                }
                store = restored
                base = restored.sequence
            case .changeSet:
                if let mark = json["revision"], store != nil {
                    // A named revision (§8.26): no change to the state.
                    guard let revision = ScopeRevision(json: mark) else {
                        throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "revision at offset \(record.offset) is malformed")
                    }
                    store?.mark(revision)
                    continue
                }
                guard store != nil, case .array(let elements)? = json["fragments"] else {
                    throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "change set at offset \(record.offset) is malformed")
                }
                var fragments: [SyncFragment] = []
                for element in elements {
                    guard let fragment = try? SyncFragment(json: element) else {
                        throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "change set at offset \(record.offset) has a bad fragment")
                    }
                    fragments.append(fragment)
                }
                let id = json["changeSet"]?.stringValue.flatMap(UUID.init(wireString:))
                // Collections written as edits (§8.24) are edits of the values this replay has reached.
                guard let current = store, let replayed = CollectionEdits.replayed(fragments, onto: current) else {
                    throw ServerError.persistence(scope: name ?? recordedName ?? "(unnamed)", reason: "change set at offset \(record.offset) does not fit its collections")
                }
                _ = store?.apply(replayed, atomic: false, maxObjects: .max, changeSetID: id)
                // Records written before history was kept have no number: they count on.
                if let sequence = json["seq"]?.int64Value { store?.restoreSequence(Int(sequence)) } else { _ = store?.advanceSequence() }
            }
        }
        return (store, recordedName, base)
    }

    /// Renames the damaged log at `url` to `NAME.damaged-<unix time>` (contents untouched), logs it
    /// and returns the error that refuses the scope. Damage is never cut off like a torn tail.
    private static func setAside(_ url: URL, name: String, log serverLog: ServerLog, because error: LogFileError) -> ServerError {
        let path = url.path(percentEncoded: false)
        let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
        let previous = LogFile.previousGenerationURL(of: url).path(percentEncoded: false)
        let hasPrevious = FileManager.default.fileExists(atPath: previous)
        var reason = "its log is damaged (\(error))"
        if rename(path, aside) == 0 {
            _ = rename(path + ".synced", aside + ".synced")  // its synced length goes with it (for `contrail log verify`)
            reason += "; the file was set aside unchanged as \(aside)"
        } else {
            reason += "; it could not be set aside (\(String(cString: strerror(errno)))) and stays unchanged"
        }
        if hasPrevious { reason += "; the previous generation is \(previous)" }
        reason += "; `contrail log verify` says what can be saved. The scope is refused until an operator repairs or removes it"
        serverLog.write("scope.damaged", level: .error, scope: name, "scope '\(name)': refused: \(reason)")
        return ServerError.persistence(scope: name, reason: reason)
    }

    /// The damaged logs of the scope whose log is at `url`, oldest first. O(files in the directory).
    static func setAsideFiles(of url: URL) -> [String] {
        let prefix = url.lastPathComponent + ".damaged-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path(percentEncoded: false))) ?? []
        return names.filter { $0.hasPrefix(prefix) && !$0.hasSuffix(".synced") }.sorted()
    }

    /// The record payload of an accepted change set, with its id (for deduplication after a
    /// restart) and, for the history (§8.26), its sequence number, the time it was accepted and
    /// the sending session's user.
    static func changeSetPayload(_ fragments: [SyncFragment], changeSetID: UUID? = nil, sequence: Int? = nil, time: Date? = nil,
                                 user: String? = nil) -> [UInt8] {
        var payload = Array(#"{"fragments":"#.utf8) + SyncFragment.serialized(fragments)
        if let changeSetID { payload += Array(#","changeSet":""#.utf8) + Array(changeSetID.wireString.utf8) + [UInt8(ascii: "\"")] }
        if let sequence { payload += Array(#","seq":"#.utf8) + Array(String(sequence).utf8) }
        if let time { payload += Array(#","time":"#.utf8) + Array(String(HistoryEntry.milliseconds(time)).utf8) }
        if let user { payload += Array(#","user":"#.utf8) + JSON.string(user).serialized() }
        payload.append(UInt8(ascii: "}"))
        return payload
    }

    /// The record payload of a named revision (§8.26), which replays as no change.
    static func revisionPayload(_ revision: ScopeRevision) -> [UInt8] {
        JSON.object(["revision": revision.json]).serialized()
    }

    /// Appends a change-set record to the log's buffer: ``flush()`` or ``sync()`` writes it out
    /// with the others of its group commit, in one `write`.
    func write(_ payload: [UInt8]) throws(ServerError) {
        try use { () throws(LogFileError) in try log.append(.changeSet, payload) }
    }

    /// Writes the buffered records out to the OS (not synced).
    func flush() throws(ServerError) {
        try use { () throws(LogFileError) in try log.flush() }
    }

    /// Forces everything written to disk (`fdatasync`) and records the synced length in the side
    /// file (`NAME.synced`); the sync marker goes out in front of the next record, in the same
    /// write (or at `close`), so a sync writes nothing to the log itself.
    func sync() throws(ServerError) {
        try use { () throws(LogFileError) in
            let point = try log.syncPoint()
            do throws(LogFileError) { try LogFile.sync(point) } catch {
                log.didSync(point, error: error)
                throw error
            }
            log.didSync(point)
        }
        lastSync = .now
    }

    /// Runs `body` on the log unless an earlier write or sync failed; its failure becomes this
    /// log's (``failed``), and every later use throws it.
    private func use(_ body: () throws(LogFileError) -> Void) throws(ServerError) {
        assert(writer.isCurrentThread, "a scope log is used off its writer thread")
        if let failure { throw failure }
        do {
            try body()
        } catch {
            failure = ServerError.persistence(scope: name, reason: error.description)
            throw failure.unsafelyUnwrapped
        }
    }

    /// The write or sync failure that ended this log's use, if any (writer thread only).
    var failed: ServerError? {
        assert(writer.isCurrentThread, "a scope log is used off its writer thread")
        return failure
    }

    /// The log's size in bytes (writer thread only).
    var size: Int {
        assert(writer.isCurrentThread, "a scope log is used off its writer thread")
        return log.size
    }

    /// How long ago the log was last synced.
    var timeSinceSync: Duration { ContinuousClock.now - lastSync }

    /// Replaces the log with one snapshot record, the state after change set `sequence` (written,
    /// synced and renamed into place). With a history retention (``ScopeLogWriter/history``) the
    /// log it replaces is first kept as a history segment, and segments past the retention go.
    func compact(snapshot: [UInt8], sequence: Int) throws(ServerError) {
        assert(writer.isCurrentThread, "a scope log is used off its writer thread")
        if let history = writer.history, sequence > baseSequence {
            do { try log.flush() } catch { throw ServerError.persistence(scope: name, reason: error.description) }
            try HistoryFiles.keep(log: url, base: baseSequence, last: sequence, closed: history.now())
        }
        do {
            try log.compact(snapshot: snapshot)
            lastSync = .now
        } catch {
            throw ServerError.persistence(scope: name, reason: error.description)
        }
        baseSequence = sequence
        if let history = writer.history {
            HistoryFiles.trim(log: url, closedBefore: history.now().addingTimeInterval(-history.retentionSeconds))
        }
    }

    /// The log's file (history reads it on the writer thread).
    var file: URL { url }

    /// Writes out, syncs if `sync`, and closes the log; a second call does nothing.
    func close(sync: Bool) {
        assert(writer.isCurrentThread, "a scope log is used off its writer thread")
        guard !isClosed else { return }
        isClosed = true
        if sync { try? log.sync() }
        try? log.close()
    }
}
