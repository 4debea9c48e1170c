/// `ScopeDetachReply` (server → client, sequenced): a Contrail extension answering ``ScopeDetach``.
/// Without `error` the subscription is gone: no `ScopeState` or `ScopeSync` for that `scopeIndex`
/// follows it. With `error` (`scope-index-not-found`) the session held no such scope.
///
/// ```json
/// [{"type":"ScopeDetachReply","index":7,"replyTo":4}]
/// [{"type":"ScopeDetachReply","index":8,"replyTo":5,"error":{"message":"Scope at index 9 was not found","type":"scope-index-not-found"}}]
/// ```
public struct ScopeDetachReply: Sendable, Equatable {
    /// The wire `type`.
    public static let typeName = "ScopeDetachReply"

    /// The server's sequence number.
    public var index: Int
    /// The `index` of the `ScopeDetach` this answers.
    public var replyTo: Int
    /// Why nothing was detached; `nil` on success.
    public var error: WireErrorBody?

    /// Creates the message.
    public init(index: Int, replyTo: Int, error: WireErrorBody? = nil) {
        self.index = index
        self.replyTo = replyTo
        self.error = error
    }

    /// Decodes and validates ("Invalid replyTo", "Invalid error").
    public init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        replyTo = try fields.unsigned("replyTo", "Invalid replyTo")
        error = try fields.errorBody("error")
    }

    /// The wire object.
    public var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "replyTo": .int(Int64(replyTo)),
        ]
        if let error { members["error"] = error.json }
        return .object(members)
    }
}
