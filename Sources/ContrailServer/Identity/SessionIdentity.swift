import Foundation

/// Who a session acts for, decided once when the session is created (by
/// ``ServerOptions/sessionHook`` or a token `contrail serve` checks): a user id, the scopes it may
/// read or write, when its credential expires, and whether it may see the server's inspector.
///
/// ```swift
/// let alice = SessionIdentity(user: "alice", grants: ["board-17": .read, "notes-alice": .write])
/// ```
public struct SessionIdentity: Sendable, Equatable {
    /// The user id (a JWT's `sub`); ``ContrailServer/revoke(user:)`` ends this user's sessions.
    public var user: String
    /// The scopes the session may fetch (read) and change (write).
    public var grants: ScopeGrants
    /// When the credential stops being valid: the server ends the session then (close 4097,
    /// `credential-expired`). Nil: never.
    public var expiry: Date?
    /// Whether the session may read the server's overview (inspector page, `/api/overview`),
    /// limited to the scopes it may read.
    public var isAdmin: Bool

    /// An identity; by default with no access at all, no expiry, not an admin.
    public init(user: String, grants: ScopeGrants = .nothing, expiry: Date? = nil, isAdmin: Bool = false) {
        self.user = user
        self.grants = grants
        self.expiry = expiry
        self.isAdmin = isAdmin
    }

    /// Every scope writable, an admin, never expiring: the identity of every session on a server
    /// without authentication, and of a session holding `contrail serve`'s shared token.
    public static let unrestricted = SessionIdentity(user: "", grants: .everything, isAdmin: true)

    /// Whether the session may `access` `scope`.
    public func may(_ access: ScopeAccess, _ scope: String) -> Bool { grants.allow(access, scope) }
}
