import ContrailWire
import Foundation

/// One accepted change set in a scope's history (``ContrailServer/history(of:since:)``): its
/// sequence number, when and by whom it was accepted, and its effective fragments as the scope's
/// log holds them.
public struct HistoryEntry: Sendable, Equatable {
    /// The change set's sequence number in the scope (1 for the first).
    public var sequence: Int
    /// When the server accepted it (nil: a record written before history was kept).
    public var time: Date?
    /// The authenticated user of the session that sent it ("" without authentication; nil: not
    /// recorded). A restore or import is an administrator's.
    public var user: String?
    /// The client's change-set id, if it sent one.
    public var changeSetID: UUID?
    /// The effective fragments (what the scope accepted, as logged), a JSON array.
    public var fragments: JSON

    /// An entry.
    public init(sequence: Int, time: Date?, user: String?, changeSetID: UUID?, fragments: JSON) {
        self.sequence = sequence
        self.time = time
        self.user = user
        self.changeSetID = changeSetID
        self.fragments = fragments
    }

    /// `{"seq", "time" (milliseconds since 1970), "user", "changeSet", "fragments"}`; absent
    /// members were not recorded.
    public var json: JSON {
        var members: [String: JSON] = ["seq": .int(Int64(sequence)), "fragments": fragments]
        if let time { members["time"] = .int(Self.milliseconds(time)) }
        if let user { members["user"] = .string(user) }
        if let changeSetID { members["changeSet"] = .string(changeSetID.wireString) }
        return .object(members)
    }

    /// Milliseconds since 1970, as history records store times.
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// The date of a time stored as milliseconds since 1970.
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
