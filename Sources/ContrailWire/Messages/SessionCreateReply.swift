/// `SessionCreateReply` (server → client, index 0, no `replyTo`): a session token on accept, an
/// error on deny (Protocol §2.2).
///
/// Contrail extension: a Contrail server lists the extra messages it understands in `extensions`
/// (e.g. `["ScopeDetach"]`). Jetstream clients ignore the field; a Contrail client sends such a
/// message only to a server that listed it, so a Jetstream server never receives one.
package struct SessionCreateReply: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "SessionCreateReply"

    /// Always 0.
    package var index: Int
    /// The new session's token, on accept.
    package var sessionToken: String?
    /// Why the session was denied, on deny.
    package var error: WireErrorBody?
    /// Contrail extension: the extra message types the server understands (`[]` from a Jetstream
    /// server, and on deny).
    package var extensions: [String]
    /// Contrail extension: the server's message limits (Protocol §8.19); nil from a Jetstream server.
    package var limits: SessionLimits?

    /// Creates the message. Exactly one of `sessionToken` and `error` should be set.
    package init(index: Int = 0, sessionToken: String? = nil, error: WireErrorBody? = nil, extensions: [String] = [],
                 limits: SessionLimits? = nil) {
        self.index = index
        self.sessionToken = sessionToken
        self.error = error
        self.extensions = extensions
        self.limits = limits
    }

    /// Decodes and validates: needs a string `sessionToken` or an `error` object (as iOS does).
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        sessionToken = try fields.optionalString("sessionToken", "Invalid sessionToken")
        error = try fields.errorBody("error")
        extensions = try fields.strings("extensions", "Invalid extensions")
        limits = SessionLimits(json: json["limits"])
        guard sessionToken != nil || error != nil else {
            throw fields.failure("Requires sessionToken or error")
        }
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = ["type": .string(Self.typeName), "index": .int(Int64(index))]
        if let sessionToken { members["sessionToken"] = .string(sessionToken) }
        if let error { members["error"] = error.json }
        if !extensions.isEmpty { members["extensions"] = .array(extensions.map(JSON.string)) }
        if let limits { members["limits"] = limits.json }
        return .object(members)
    }
}
