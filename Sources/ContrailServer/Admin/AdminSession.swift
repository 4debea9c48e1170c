import ContrailWire

/// One live session as the admin surface lists it (``ContrailServer/sessions()``,
/// `GET /api/admin/sessions`, `contrail admin sessions`). Never its token or its parameters.
public struct AdminSession: Sendable, Equatable {
    /// The session's number, as the log names it (`session 12 created from …`); what
    /// ``ContrailServer/endSession(number:)`` takes.
    public var number: Int
    /// The user it acts for (``SessionIdentity/user``; empty without authentication).
    public var user: String
    /// Whether its identity is an admin's.
    public var isAdmin: Bool
    /// The client's address (``ServerOptions/trustedProxies`` resolved); nil while no connection is
    /// attached (between a drop and a resume), `in-process` for an in-memory connection.
    public var address: String?
    /// The scopes it fetched, in the order it fetched them.
    public var scopes: [String]
    /// Bytes of messages sent to it and not yet acknowledged (its resend buffer, bounded by
    /// ``ServerOptions/maxResendBytes``).
    public var bytesQueued: Int

    /// A session's entry.
    public init(number: Int, user: String, isAdmin: Bool, address: String?, scopes: [String], bytesQueued: Int) {
        self.number = number
        self.user = user
        self.isAdmin = isAdmin
        self.address = address
        self.scopes = scopes
        self.bytesQueued = bytesQueued
    }

    /// `{"number", "user", "admin", "address" (or null), "scopes", "bytesQueued"}`.
    public var json: JSON {
        .object(["number": .int(Int64(number)), "user": .string(user), "admin": .bool(isAdmin),
                 "address": address.map(JSON.string) ?? .null, "scopes": .array(scopes.map(JSON.string)),
                 "bytesQueued": .int(Int64(bytesQueued))])
    }
}
