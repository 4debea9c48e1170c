import ContrailWire
import Foundation

/// The files that hold a scope's history, and reading them. Run on the server's
/// ``ScopeLogWriter`` thread (or offline), never on the cooperative pool.
///
/// The scope's log (`NAME.scope`) holds a snapshot (the state after change set `base`) and the
/// change sets accepted since; that is the whole history by default. With a retention period
/// (``ServerOptions/historyRetention``) a compaction keeps the log it replaces as a segment in
/// `NAME.scope.history/`, named `BASE-LAST-CLOSED.log` (sequence numbers, and the compaction's time
/// in milliseconds): a hard link made and synced before the new log is renamed into place, so a
/// crash at any point leaves the history whole (at worst a segment that is still the live log's
/// file, replaced by the next compaction). A segment is deleted once it was closed more than the
/// retention period ago, so every change set stays readable for at least that long.
enum HistoryFiles {
    /// One file of history: the state after change set ``base`` and the change sets after it.
    struct Run {
        let base: Int
        /// The file's records, the snapshot first.
        let records: [LogRecord]
        /// The change sets, with the index of their record in ``records``.
        let entries: [(entry: HistoryEntry, record: Int)]
        /// The revisions its snapshot and records hold.
        let revisions: [ScopeRevision]
        /// The sequence number of its last change set (``base`` when it has none).
        var last: Int { entries.last?.entry.sequence ?? base }
    }

    /// The directory of the segments of the scope whose log is at `log`.
    static func segmentDirectory(of log: URL) -> URL {
        log.deletingLastPathComponent().appending(path: log.lastPathComponent + ".history", directoryHint: .isDirectory)
    }

    /// A segment's file name: sequence numbers zero-padded, so names sort by base.
    static func segmentName(base: Int, last: Int, closed: Date) -> String {
        String(format: "%020ld-%020ld-%015lld.log", base, last, HistoryEntry.milliseconds(closed))
    }

    /// The base, last sequence number and closing time a segment's name holds; nil for another file.
    static func parse(segmentName name: String) -> (base: Int, last: Int, closed: Date)? {
        guard name.hasSuffix(".log") else { return nil }
        let parts = name.dropLast(4).split(separator: "-")
        guard parts.count == 3, let base = Int(parts[0]), let last = Int(parts[1]), let closed = Int64(parts[2]) else { return nil }
        return (base, last, HistoryEntry.date(closed))
    }

    /// Keeps the log at `log` (whose snapshot is the state after `base`, its last change set
    /// `last`) as a segment before a compaction replaces it: a hard link under a temporary name,
    /// renamed to its segment name, the directory synced; then other names of the same base go
    /// (earlier links of this same file, left by a crash before its compaction finished).
    static func keep(log: URL, base: Int, last: Int, closed: Date) throws(ServerError) {
        let directory = segmentDirectory(of: log)
        let path = directory.path(percentEncoded: false)
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw failure("mkdir", path) }
        let name = segmentName(base: base, last: last, closed: closed)
        let temporary = path + "/segment.tmp"
        _ = unlink(temporary)
        if link(log.path(percentEncoded: false), temporary) != 0 { throw failure("link", temporary) }
        if rename(temporary, path + "/" + name) != 0 { throw failure("rename", temporary) }
        ScopeBackup.syncDirectory(path)
        for other in segments(in: directory) where other.base == base && other.name != name { _ = unlink(path + "/" + other.name) }
    }

    /// Deletes the segments of `log` closed before `cutoff`; how many. O(segments).
    @discardableResult
    static func trim(log: URL, closedBefore cutoff: Date) -> Int {
        let directory = segmentDirectory(of: log)
        var removed = 0
        for segment in segments(in: directory) where segment.closed < cutoff {
            if unlink(directory.appending(path: segment.name).path(percentEncoded: false)) == 0 { removed += 1 }
        }
        if removed > 0 { ScopeBackup.syncDirectory(directory.path(percentEncoded: false)) }
        return removed
    }

    /// The segments in `directory`, by base then last sequence number.
    static func segments(in directory: URL) -> [(name: String, base: Int, last: Int, closed: Date)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(percentEncoded: false))) ?? []
        return names.compactMap { name in parse(segmentName: name).map { (name, $0.base, $0.last, $0.closed) } }
            .sorted { ($0.base, $0.last) < ($1.base, $1.last) }
    }

    /// The scope's log read as history.
    private static func readLog(_ log: URL) throws(AdminError) -> Run {
        do throws(AdminError) { return try read(log) } catch { throw .storage("the scope's log cannot be read: \(error)") }
    }

    /// The segments to read: with `keepsSegments` those `wanted` picks (by name), read in order;
    /// a damaged one is left out (the rest of the history stays readable). O(what they hold).
    private static func readSegments(of log: URL, _ keepsSegments: Bool,
                                     _ wanted: ((base: Int, last: Int)) -> Bool) -> [Run] {
        guard keepsSegments else { return [] }
        let directory = segmentDirectory(of: log)
        return segments(in: directory).filter { wanted(($0.base, $0.last)) }.compactMap { try? read(directory.appending(path: $0.name)) }
    }

    /// The oldest point whose state can be rebuilt: the smallest base of the segments and the log.
    private static func oldest(of log: URL, _ keepsSegments: Bool, live: Run) -> Int {
        let bases = keepsSegments ? segments(in: segmentDirectory(of: log)).map(\.base) : []
        return (bases + [live.base]).min() ?? live.base
    }

    /// Reads one file of history.
    static func read(_ url: URL) throws(AdminError) -> Run {
        let recovery: LogRecovery
        do { recovery = try LogFile.read(at: url) } catch { throw .storage("\(url.lastPathComponent): \(error)") }
        var base = 0
        var sequence = 0
        var entries: [(entry: HistoryEntry, record: Int)] = []
        var revisions: [ScopeRevision] = []
        for (index, record) in recovery.records.enumerated() {
            guard let json = try? JSON(parsing: record.payload) else { throw .storage("\(url.lastPathComponent): record at offset \(record.offset) is not JSON") }
            switch record.kind {
            case .snapshot:
                base = json["seq"]?.int64Value.map { Int($0) } ?? 0
                sequence = base
                entries = []
                revisions = (json["revisions"]?.arrayValue ?? []).compactMap(ScopeRevision.init(json:))
            case .changeSet:
                if let mark = json["revision"] {
                    if let revision = ScopeRevision(json: mark) { revisions.append(revision) }
                    continue
                }
                sequence = json["seq"]?.int64Value.map { Int($0) } ?? sequence + 1
                let entry = HistoryEntry(sequence: sequence, time: json["time"]?.int64Value.map(HistoryEntry.date),
                                         user: json["user"]?.stringValue,
                                         changeSetID: json["changeSet"]?.stringValue.flatMap(UUID.init(wireString:)),
                                         fragments: json["fragments"] ?? .array([]))
                entries.append((entry, index))
            }
        }
        return Run(base: base, records: recovery.records, entries: entries, revisions: revisions)
    }

    /// The history of the scope whose log is at `log` after `since` (nil: all of it): the log and,
    /// with `keepsSegments`, the segments holding change sets after `since` (all of them for a time
    /// or nil). The revisions are the log's (its snapshot keeps every earlier one). O(what it reads).
    static func history(log: URL, segments keepsSegments: Bool, scope: String, since: HistoryPoint?) throws(AdminError) -> ScopeHistory {
        let live = try readLog(log)
        var after: Int?
        switch since {
        case .sequence(let number)?: after = number
        case .revision(let label)?:
            guard let revision = live.revisions.last(where: { $0.label == label }) else { throw .unknownRevision(label) }
            after = revision.sequence
        case .time?, nil: after = nil
        }
        let runs = readSegments(of: log, keepsSegments) { segment in after.map { segment.last > $0 } ?? true } + [live]
        var bySequence: [Int: HistoryEntry] = [:]
        for run in runs { for item in run.entries { bySequence[item.entry.sequence] = item.entry } }
        var entries = bySequence.values.sorted { $0.sequence < $1.sequence }
        if let after { entries.removeAll { $0.sequence <= after } }
        if case .time(let date)? = since { entries.removeAll { ($0.time ?? .distantPast) < date } }
        return ScopeHistory(scope: scope, oldest: oldest(of: log, keepsSegments, live: live), latest: live.last, entries: entries,
                            revisions: live.revisions)
    }

    /// The scope's state after `point` and the sequence number it stands for, replayed from the
    /// one file that holds it (the log when it does). O(that file), plus every file for a time.
    static func state(log: URL, segments keepsSegments: Bool, scope: String, at point: HistoryPoint) throws(AdminError) -> (sequence: Int, store: ScopeStore) {
        let live = try readLog(log)
        let oldest = oldest(of: log, keepsSegments, live: live)
        let sequence: Int
        switch point {
        case .sequence(let number): sequence = number
        case .revision(let label):
            guard let revision = live.revisions.last(where: { $0.label == label }) else { throw .unknownRevision(label) }
            sequence = revision.sequence
        case .time(let date):
            let entries = (readSegments(of: log, keepsSegments) { _ in true } + [live]).flatMap(\.entries).map(\.entry)
            if let last = entries.filter({ ($0.time ?? .distantFuture) <= date }).max(by: { $0.sequence < $1.sequence }) {
                sequence = last.sequence
            } else {
                guard oldest == 0 else { throw .historyUnavailable("no change set kept was accepted at or before \(point)") }
                sequence = 0
            }
        }
        guard sequence >= 0, sequence <= live.last else { throw .historyUnavailable("the scope has \(live.last) change set(s); there is no \(sequence)") }
        // The log when it reaches the point, else the newest segment that does.
        let holding = live.base <= sequence ? live
            : readSegments(of: log, keepsSegments) { $0.base <= sequence && sequence <= $0.last }.last
        guard let run = holding, run.base <= sequence, sequence <= run.last else {
            throw .historyUnavailable("change set \(sequence) is no longer kept (the oldest state kept is after \(oldest))")
        }
        let end = run.entries.first(where: { $0.entry.sequence == sequence })?.record ?? 0
        let replayed: ScopeStore?
        do throws(ServerError) {
            replayed = try ScopePersistence.replay(Array(run.records[...end]), name: nil).store
        } catch {
            throw .storage("the history of '\(scope)' cannot be replayed: \(error)")
        }
        guard let replayed else { throw .storage("the history of '\(scope)' has no snapshot") }
        return (sequence, replayed)
    }

    private static func failure(_ call: String, _ path: String) -> ServerError {
        .persistence(scope: path, reason: "\(call) failed: \(String(cString: strerror(errno)))")
    }
}
