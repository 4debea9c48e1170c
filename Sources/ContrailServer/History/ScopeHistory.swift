import ContrailWire
import Foundation

/// A scope's history as the server keeps it (``ContrailServer/history(of:since:)``): the change
/// sets it can still show, the named revisions, and the range of points whose state it can
/// rebuild (``ContrailServer/scopeState(_:at:)``).
public struct ScopeHistory: Sendable, Equatable {
    /// The scope's name.
    public var scope: String
    /// The earliest point whose state can be rebuilt: the sequence number of the oldest snapshot
    /// kept (0 while the scope's first change set is still kept).
    public var oldest: Int
    /// The sequence number of the scope's last change set.
    public var latest: Int
    /// The change sets kept (after the `since` point asked for), oldest first.
    public var entries: [HistoryEntry]
    /// The named revisions, oldest first (also those whose change sets are no longer kept).
    public var revisions: [ScopeRevision]

    /// A history.
    public init(scope: String, oldest: Int, latest: Int, entries: [HistoryEntry], revisions: [ScopeRevision]) {
        self.scope = scope
        self.oldest = oldest
        self.latest = latest
        self.entries = entries
        self.revisions = revisions
    }

    /// `{"scope", "oldest", "latest", "entries": [HistoryEntry.json], "revisions": [ScopeRevision.json]}`.
    public var json: JSON {
        .object(["scope": .string(scope), "oldest": .int(Int64(oldest)), "latest": .int(Int64(latest)),
                 "entries": .array(entries.map(\.json)), "revisions": .array(revisions.map(\.json))])
    }

    /// Reads ``json`` (what `contrail scope history` gets from the admin API); nil for another shape.
    public init?(json: JSON) {
        guard case .string(let scope)? = json["scope"], let oldest = json["oldest"]?.int64Value,
              let latest = json["latest"]?.int64Value, case .array(let entries)? = json["entries"],
              case .array(let revisions)? = json["revisions"] else { return nil }
        var parsed: [HistoryEntry] = []
        for entry in entries {
            guard let sequence = entry["seq"]?.int64Value, let fragments = entry["fragments"] else { return nil }
            parsed.append(HistoryEntry(sequence: Int(sequence), time: entry["time"]?.int64Value.map(HistoryEntry.date),
                                       user: entry["user"]?.stringValue,
                                       changeSetID: entry["changeSet"]?.stringValue.flatMap(UUID.init(wireString:)),
                                       fragments: fragments))
        }
        let marks = revisions.compactMap(ScopeRevision.init(json:))
        guard marks.count == revisions.count else { return nil }
        self.init(scope: scope, oldest: Int(oldest), latest: Int(latest), entries: parsed, revisions: marks)
    }
}
