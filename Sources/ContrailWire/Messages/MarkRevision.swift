/// `MarkRevision` (client → server, sequenced): a Contrail extension (Protocol §8.26) naming the
/// scope's current state, after every change set this session sent before it, `label`. The server
/// answers with a ``MarkRevisionReply``. A client sends it only to a server whose
/// `SessionCreateReply` lists `"MarkRevision"` in `extensions` (one that keeps history): an
/// original Jetstream server never sees it.
///
/// ```json
/// {"type":"MarkRevision","index":5,"scopeIndex":0,"label":"v1"}
/// ```
public struct MarkRevision: Sendable, Equatable {
    /// The wire `type`, which is also the extension's name in `SessionCreateReply.extensions`.
    public static let typeName = "MarkRevision"

    /// The client's sequence number (shared with `ScopeFetch` and `ScopeSync`).
    public var index: Int
    /// The session's handle for the scope, from its `ScopeFetchReply`.
    public var scopeIndex: Int
    /// The revision's name, unique in the scope.
    public var label: String

    /// Creates the message.
    public init(index: Int, scopeIndex: Int, label: String) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.label = label
    }

    /// Decodes and validates ("Invalid scopeIndex", "Invalid label").
    public init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        label = try fields.string("label", "Invalid label")
    }

    /// The wire object.
    public var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)), "label": .string(label)]
    }
}
