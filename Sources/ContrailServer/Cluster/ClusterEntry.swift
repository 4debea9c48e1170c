import ContrailWire
import Foundation
import ContrailNATS

/// One message of a scope's log: the genesis that fixes the root UUID, or a change set as a
/// client sent it (every server applies it to the same state, so all reach the same outcome).
enum ClusterEntry: Equatable {
    /// The scope's first message: its root UUID.
    case genesis(root: UUID)
    /// A `ScopeSync`'s fragments, atomic flag and change-set id (every server's apply skips an id
    /// it applied before, so a change set resent to another server after a failover applies once).
    case changeSet(fragments: [SyncFragment], atomic: Bool, id: UUID?)
    /// Several `changeSet`s a server's group commit appended as one message (each keeps its own
    /// atomicity and id, and is applied on its own, in this order). A batch of one is written as
    /// the `changeSet` itself.
    case batch([ClusterEntry])

    /// Header naming the subject's previous sequence (the expected last sequence it was published
    /// with): a reader that has not applied exactly that sequence has missed trimmed messages.
    static let previousHeader = "Contrail-Previous"

    /// The payload.
    var encoded: [UInt8] {
        switch self {
        case .genesis(let root):
            return JSON.object(["root": .string(root.wireString)]).serialized()
        case .changeSet(let fragments, let atomic, let id):
            let idMember = id.map { #""changeSet":"\#($0.wireString)","# } ?? ""
            return Array(#"{"atomic":\#(atomic),\#(idMember)"fragments":"#.utf8) + SyncFragment.serialized(fragments) + [UInt8(ascii: "}")]
        case .batch(let entries):
            return Self.batchPayload(entries.map(\.encoded))
        }
    }

    /// The payload of a batch of change sets from their own payloads (one is itself). O(bytes).
    static func batchPayload(_ payloads: [[UInt8]]) -> [UInt8] {
        if payloads.count == 1 { return payloads[0] }
        var bytes = Array(#"{"batch":["#.utf8)
        bytes.reserveCapacity(payloads.reduce(12) { $0 + $1.count + 1 })
        for (index, payload) in payloads.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += payload
        }
        return bytes + Array("]}".utf8)
    }

    /// How deep a log entry may nest: two levels more than a session's message (a change set's
    /// fragments sit two levels deeper in a batch than in a `ScopeSync`), so every change set a
    /// session parsed decodes from the log as well.
    static let decodingLimits = JSONLimits(maxDepth: JSONLimits().maxDepth + 2)

    /// Decodes a payload. O(bytes).
    /// - Throws: `invalidResponse` when it is neither shape.
    init(decoding payload: [UInt8]) throws(NATSError) {
        guard let json = try? JSON(parsing: payload, limits: Self.decodingLimits) else { throw .invalidResponse("a scope log entry is not JSON") }
        if case .string(let text)? = json["root"], let root = UUID(wireString: text) {
            self = .genesis(root: root)
            return
        }
        if case .array(let members)? = json["batch"] {
            var entries: [ClusterEntry] = []
            entries.reserveCapacity(members.count)
            for member in members { entries.append(try ClusterEntry(changeSet: member)) }
            self = .batch(entries)
            return
        }
        self = try ClusterEntry(changeSet: json)
    }

    /// Decodes one change set's object (a message's, or a batch member's).
    init(changeSet json: JSON) throws(NATSError) {
        guard case .array(let elements)? = json["fragments"] else { throw .invalidResponse("a scope log entry has no fragments") }
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(elements.count)
        for element in elements {
            guard let fragment = try? SyncFragment(json: element) else { throw .invalidResponse("a scope log entry has a bad fragment") }
            fragments.append(fragment)
        }
        self = .changeSet(fragments: fragments, atomic: json["atomic"]?.boolValue ?? false,
                          id: json["changeSet"]?.stringValue.flatMap(UUID.init(wireString:)))
    }

    /// A change set's payload (``encoded``) with the history's members in front: `time`
    /// (milliseconds since 1970, when this server took it) and `user` (the sending session's
    /// authenticated user). A server that does not keep history ignores them (unknown members of an
    /// entry are skipped; only an unknown entry kind needs a new log format). O(bytes).
    static func stamped(_ payload: [UInt8], user: String, time: Date) -> [UInt8] {
        guard payload.first == UInt8(ascii: "{") else { return payload }
        var bytes = Array(#"{"time":\#(HistoryEntry.milliseconds(time)),"user":"#.utf8) + JSON.string(user).serialized() + [UInt8(ascii: ",")]
        bytes += payload.dropFirst()
        return bytes
    }

    /// The subject token of a scope name: its UTF-8 bytes in hex (any name becomes a valid token).
    static func token(for scopeName: String) -> String {
        scopeName.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
