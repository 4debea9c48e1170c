/// The error object carried in replies and close reasons: `{"message": …, "type"?: …}`.
///
/// `type` is present only for the server's typed errors (Protocol §5.1). The static members
/// build those errors with the original server's wording.
public struct WireErrorBody: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Human-readable message.
    public var message: String
    /// Machine-readable kind, e.g. `scope-index-not-found`; `nil` for untyped errors.
    public var type: String?

    /// Creates an error body.
    public init(message: String, type: String? = nil) {
        self.message = message
        self.type = type
    }

    /// Reads `{"message": string, "type"?: string}`; `nil` if it has another shape.
    public init?(json: JSON) {
        guard case .object(let members) = json, case .string(let message)? = members["message"] else { return nil }
        switch members["type"] {
        case nil, .null?: self.init(message: message)
        case .string(let type)?: self.init(message: message, type: type)
        default: return nil
        }
    }

    /// `{"message": …}` plus `"type"` when set.
    public var json: JSON {
        var members: [String: JSON] = ["message": .string(message)]
        if let type { members["type"] = .string(type) }
        return .object(members)
    }

    /// The JSON text (keys sorted).
    public var jsonString: String {
        String(decoding: json.serialized(sortedKeys: true), as: UTF8.self)
    }

    /// The JSON text for a WebSocket close reason: at most `maxBytes` (123, what a close frame
    /// holds) UTF-8 bytes, still valid JSON. An over-long message is cut on a character boundary
    /// and ends with "…"; the type is kept. O(n) in the message length.
    public func closeReason(maxBytes: Int = 123) -> String {
        let full = jsonString
        guard full.utf8.count > maxBytes else { return full }
        var shortened = self
        var characters = Array(message)
        // Each round drops at least one character; JSON escapes make the length non-linear in it.
        while !characters.isEmpty {
            let excess = shortened.jsonString.utf8.count - maxBytes
            guard excess > 0 else { break }
            characters.removeLast(min(characters.count, max(1, excess)))
            shortened.message = String(characters) + "…"
        }
        let text = shortened.jsonString
        return text.utf8.count <= maxBytes ? text : WireErrorBody(message: "", type: nil).jsonString
    }

    /// The message, with the type in parentheses when there is one.
    public var description: String {
        type.map { "\(message) (\($0))" } ?? message
    }
}

// MARK: - Typed server errors (Protocol §5.1) and fixed messages (§5.2)

extension WireErrorBody {
    /// Close 4096: the app's connection hook denied without an error.
    public static let rejected = WireErrorBody(message: "Connection was rejected", type: "rejected")
    /// Close 4096: the first frame was valid but not a bare `SessionCreate`.
    public static let unrecognizedHandshake = WireErrorBody(
        message: "Unrecognized handshake, should send SessionCreate message as first and only message",
        type: "unrecognized-handshake")
    /// Close 4096: a resume named an unknown or expired session token.
    public static let sessionTokenUnrecognized = WireErrorBody(
        message: "Session token unrecognized", type: "session-token-unrecognized")
    /// Close 4096: no `SessionCreate` arrived in time.
    public static let sessionEstablishTimedOut = WireErrorBody(
        message: "Session took long to establish and timed out", type: "session-establish-timedout")

    /// Every entry of a `ScopeSyncReply` for a `scopeIndex` the session does not have.
    public static func scopeIndexNotFound(_ scopeIndex: Int) -> WireErrorBody {
        WireErrorBody(message: "Scope at index \(scopeIndex) was not found", type: "scope-index-not-found")
    }

    /// Every entry of a `ScopeSyncReply` whose whole message failed (procedure, storage, …).
    public static func couldNotApplySyncMessage(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: "Could not apply SyncMessage: \(reason)", type: "could-not-apply-sync-message")
    }

    /// `SessionCreateReply` error when the app's session hook denies.
    public static let sessionCreationDenied = WireErrorBody(message: "Session creation denied")

    /// Contrail extension (close 4098, §8.6/§8.7): the peer sent input that could not be decoded.
    public static func badInput(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: reason, type: "bad-input")
    }

    /// Contrail extension (cluster mode): `SessionCreateReply` error and close 4096 reason when the
    /// server cannot serve sessions now (it cannot reach NATS); the client may try again later or
    /// another server of the cluster.
    public static func serverUnavailable(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: "Server unavailable: \(reason)", type: "server-unavailable")
    }

    /// Contrail extension (§8.22): the reason of a ``JetstreamCloseCode/draining`` close: the server
    /// is shutting down gracefully; reconnect, preferably to another server, with a new session.
    public static let serverDraining = WireErrorBody(message: "Server is draining: reconnect to another server", type: "server-draining")

    /// Contrail extension (§8.17): a `ScopeFetchReply` error for a scope name the server does not
    /// accept (empty, longer than its limit in UTF-8 bytes, or with control characters).
    public static func invalidScopeName(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: "Invalid scope name: \(reason)", type: "invalid-scope-name")
    }

    /// Contrail extension (§8.17): a `ScopeFetchReply` error for a scope that does not exist on a
    /// server that creates none on demand.
    public static let scopeNotFound = WireErrorBody(message: "No such scope", type: "scope-not-found")

    /// `SessionCreateReply` error when the app's session hook (or `contrail serve`'s token check)
    /// denies with a reason (Contrail extension: the type; without a reason the original wording).
    public static func sessionCreationDenied(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: "Session creation denied: \(reason)", type: "session-creation-denied")
    }

    /// Contrail extension (§8.18): the session's identity may not do this with the scope: a
    /// `ScopeFetch` without read access, every fragment of a `ScopeSync` without write access.
    public static func forbidden(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: reason, type: "forbidden")
    }

    /// Contrail extension (§8.18): close 4097 reason when the server revoked the session's user.
    public static let sessionRevoked = WireErrorBody(message: "Session revoked", type: "session-revoked")

    /// Contrail extension (§8.18): close 4097 reason when the session's credential expired.
    public static let credentialExpired = WireErrorBody(message: "Credential expired", type: "credential-expired")

    /// Contrail extension (§8.25): a `ScopeFetchReply` error for a state too large for one
    /// `ScopeState`, to a client that did not ask for `ScopeStateChunk`s. Fetching again cannot help.
    public static func stateTooLarge(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: reason, type: "state-too-large")
    }

    /// Contrail extension (§8.6): a configured limit was exceeded.
    public static func limitExceeded(_ reason: String) -> WireErrorBody {
        WireErrorBody(message: reason, type: "limit-exceeded")
    }
}
