/// `Presence` (client → server, index 0): a Contrail extension (Protocol §8.20). The session's
/// ephemeral value in one scope (a name, a colour, a cursor: the app decides), or `null` to publish
/// none (still watching the scope's peers). The first one for a scope on a connection subscribes the
/// session to the scope's presence: the server answers with a ``PresencePeers`` snapshot and sends
/// every later change. Unsequenced: never buffered, resent or acknowledged, and never recorded.
/// Sent only to a server whose `SessionCreateReply` lists `"Presence"` in `extensions`.
///
/// ```json
/// {"type":"Presence","index":0,"scopeIndex":0,"value":{"name":"Ada","cursor":[120,48]}}
/// ```
package struct PresenceUpdate: Sendable, Equatable {
    /// The wire `type`, which is also the extension's name in `SessionCreateReply.extensions`.
    package static let typeName = "Presence"

    /// Always 0.
    package var index: Int
    /// The session's handle for the scope, from its `ScopeFetchReply`.
    package var scopeIndex: Int
    /// The published value; nil (`null`) publishes none.
    package var value: JSON?

    /// Creates the message.
    package init(index: Int = 0, scopeIndex: Int, value: JSON?) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.value = value
    }

    /// Decodes and validates ("Invalid scopeIndex", "Presence must be unsequenced").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        guard index == 0 else { throw fields.failure("Presence must be unsequenced") }
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        switch fields.members["value"] {
        case nil, .null?: value = nil
        case let value?: self.value = value
        }
    }

    /// The wire object (`value` always present, `null` for none).
    package var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
         "value": value ?? .null]
    }
}
