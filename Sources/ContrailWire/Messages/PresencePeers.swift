/// `PresencePeers` (server → client, index 0): a Contrail extension (Protocol §8.20). The other
/// sessions' presence in one scope: with `replace` the whole set (the answer to a session's first
/// ``PresenceUpdate`` for the scope on a connection), otherwise the peers that joined or changed
/// (with a value) and those that left (`value` null). A session never sees itself. Sent only to a
/// session that sent a `Presence` for the scope, so a Jetstream client never receives one.
///
/// ```json
/// [{"type":"PresencePeers","index":0,"scopeIndex":0,"replace":true,
///   "peers":[{"peer":"5c0e…","user":"ada","value":{"name":"Ada","cursor":[120,48]}}]}]
/// [{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[{"peer":"5c0e…","value":null}]}]
/// ```
package struct PresencePeers: Sendable, Equatable {
    /// One peer's entry.
    package struct Entry: Sendable, Equatable {
        /// The peer's id: random per session, the same across its reconnects (never its token).
        package var peer: String
        /// The identity's user id, when the server authenticates sessions.
        package var user: String?
        /// The peer's value; nil (`null`): the peer left or withdrew its value.
        package var value: JSON?

        /// Creates the entry.
        package init(peer: String, user: String? = nil, value: JSON?) {
            self.peer = peer
            self.user = user
            self.value = value
        }

        /// Reads `{"peer":…,"user"?:…,"value":…}`: nil unless `peer` is a string and `user`, when
        /// present, too; a missing or `null` value is nil (left).
        package init?(json: JSON) {
            guard case .string(let peer)? = json["peer"] else { return nil }
            switch json["user"] {
            case nil, .null?: user = nil
            case .string(let name)?: user = name
            default: return nil
            }
            switch json["value"] {
            case nil, .null?: value = nil
            case let present?: value = present
            }
            self.peer = peer
        }

        /// The wire object.
        package var json: JSON {
            var members: [String: JSON] = ["peer": .string(peer), "value": value ?? .null]
            if let user { members["user"] = .string(user) }
            return .object(members)
        }
    }

    /// The wire `type`.
    package static let typeName = "PresencePeers"

    /// Always 0.
    package var index: Int
    /// The session's handle for the scope.
    package var scopeIndex: Int
    /// Whether `peers` is the whole set (every peer not named has left).
    package var replace: Bool
    /// The peers that joined, changed or left.
    package var peers: [Entry]

    /// Creates the message.
    package init(index: Int = 0, scopeIndex: Int, replace: Bool = false, peers: [Entry]) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.replace = replace
        self.peers = peers
    }

    /// Decodes and validates ("Invalid scopeIndex", "Invalid peers").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        replace = fields.members["replace"] == .bool(true)
        guard case .array(let elements)? = fields.members["peers"] else { throw fields.failure("Invalid peers") }
        var peers: [Entry] = []
        peers.reserveCapacity(elements.count)
        for element in elements {
            guard let entry = Entry(json: element) else { throw fields.failure("Invalid peers") }
            peers.append(entry)
        }
        self.peers = peers
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
            "peers": .array(peers.map(\.json)),
        ]
        if replace { members["replace"] = .bool(true) }
        return .object(members)
    }
}
