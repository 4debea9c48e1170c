import ContrailWire
import Foundation

/// A named point in a scope's history (Protocol §8.26): a label given to the state after change
/// set ``sequence``, by a client (`scope.markRevision("v1")`) or an administrator
/// (`contrail scope mark`). `contrail scope at` and `restore` accept the label in place of the number.
public struct ScopeRevision: Sendable, Equatable {
    /// The label, unique within the scope.
    public var label: String
    /// The sequence number of the last change set the revision includes (0: the empty scope).
    public var sequence: Int
    /// When it was marked, on the server's ``ServerOptions/wallClock``.
    public var time: Date
    /// Who marked it: the authenticated user of the session or admin credential ("" when the
    /// server has no authentication).
    public var user: String

    /// A revision.
    public init(label: String, sequence: Int, time: Date, user: String) {
        self.label = label
        self.sequence = sequence
        self.time = time
        self.user = user
    }

    /// `{"label", "seq", "time" (milliseconds since 1970), "user"}`: in snapshots, log records and
    /// the admin API.
    public var json: JSON {
        .object(["label": .string(label), "seq": .int(Int64(sequence)), "time": .int(HistoryEntry.milliseconds(time)),
                 "user": .string(user)])
    }

    /// Reads ``json``; nil for another shape.
    init?(json: JSON) {
        guard case .string(let label)? = json["label"], let sequence = json["seq"]?.int64Value, sequence >= 0 else { return nil }
        self.init(label: label, sequence: Int(sequence), time: HistoryEntry.date(json["time"]?.int64Value ?? 0),
                  user: json["user"]?.stringValue ?? "")
    }

    /// Why `label` cannot name a revision, or nil: 1 to 100 bytes of UTF-8, no control character,
    /// not all digits (a number names a sequence number), not an ISO 8601 time (a time names the
    /// change set accepted last by then).
    public static func problem(with label: String) -> String? {
        if label.isEmpty || label.utf8.count > 100 { return "a revision label has 1 to 100 bytes" }
        if label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "a revision label has no control characters" }
        if label.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) { return "a revision label is not a number (numbers name sequence numbers)" }
        if case .time = HistoryPoint(parsing: label) { return "a revision label is not an ISO 8601 time (times name points too)" }
        return nil
    }
}
