import Foundation

/// `ScopeState` (server → client, sequenced): the whole tree of a scope as fragments, the root
/// first with type `change`, every other object an `add` (Protocol §2.5, §3.4).
package struct ScopeState: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "ScopeState"

    /// The server's sequence number.
    package var index: Int
    /// The session's handle for the scope.
    package var scopeIndex: Int
    /// The UUID of the server's root object (sent lowercase).
    package var rootUUID: UUID
    /// The tree in pre-order, starting at the root.
    package var fragments: [SyncFragment]

    /// Creates the message.
    package init(index: Int, scopeIndex: Int, rootUUID: UUID, fragments: [SyncFragment]) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.rootUUID = rootUUID
        self.fragments = fragments
    }

    /// Decodes and validates; a bad fragment fails with `WireError.invalidFragment(index:reason:)`.
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        rootUUID = try fields.rootUUID()
        fragments = try fields.syncFragments()
    }

    /// The wire object.
    package var json: JSON {
        [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
            "rootUUID": .string(rootUUID.wireString), "fragments": .array(fragments.map(\.json)),
        ]
    }
}
