/// `ScopeDetach` (client → server, sequenced): a Contrail extension (Protocol §8, "no message
/// unsubscribes from a scope", §6.16). The server stops sending the scope to this session, forgets
/// `scopeIndex` and answers with a ``ScopeDetachReply``. A client sends it only to a server whose
/// `SessionCreateReply` lists `"ScopeDetach"` in `extensions`: a Jetstream server never sees it.
///
/// ```json
/// {"type":"ScopeDetach","index":4,"scopeIndex":0}
/// ```
public struct ScopeDetach: Sendable, Equatable {
    /// The wire `type`, which is also the extension's name in `SessionCreateReply.extensions`.
    public static let typeName = "ScopeDetach"

    /// The client's sequence number (shared with `ScopeFetch` and `ScopeSync`).
    public var index: Int
    /// The session's handle for the scope, from its `ScopeFetchReply`.
    public var scopeIndex: Int

    /// Creates the message.
    public init(index: Int, scopeIndex: Int) {
        self.index = index
        self.scopeIndex = scopeIndex
    }

    /// Decodes and validates ("Invalid scopeIndex").
    public init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
    }

    /// The wire object.
    public var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex))]
    }
}
