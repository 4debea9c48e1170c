/// `ScopeFetchReply` (server → client, sequenced): the scope's handle, or why the fetch failed
/// (Protocol §2.4).
package struct ScopeFetchReply: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "ScopeFetchReply"

    /// The server's sequence number.
    package var index: Int
    /// The `index` of the `ScopeFetch` this answers.
    package var replyTo: Int
    /// On success: the session's handle for the scope, used by every later `ScopeSync`.
    package var scopeIndex: Int?
    /// On failure: the app's error.
    package var error: WireErrorBody?

    /// Creates the message. Exactly one of `scopeIndex` and `error` should be set.
    package init(index: Int, replyTo: Int, scopeIndex: Int? = nil, error: WireErrorBody? = nil) {
        self.index = index
        self.replyTo = replyTo
        self.scopeIndex = scopeIndex
        self.error = error
    }

    /// Decodes and validates: needs `replyTo` and a `scopeIndex` or an `error` (as iOS does).
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        replyTo = try fields.unsigned("replyTo", "Invalid replyTo")
        scopeIndex = try fields.optionalUnsigned("scopeIndex", "Invalid scopeIndex")
        error = try fields.errorBody("error")
        guard scopeIndex != nil || error != nil else {
            throw fields.failure("Requires scopeIndex or error")
        }
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "replyTo": .int(Int64(replyTo)),
        ]
        if let scopeIndex { members["scopeIndex"] = .int(Int64(scopeIndex)) }
        if let error { members["error"] = error.json }
        return .object(members)
    }
}
