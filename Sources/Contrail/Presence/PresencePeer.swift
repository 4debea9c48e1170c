/// Another session's presence in a scope: its id, its user (when the server authenticates
/// sessions) and the value it published (Protocol §8.20).
public struct PresencePeer: Sendable, Equatable, Identifiable {
    /// The peer's id: random per session, the same across its reconnects; never its token.
    public var id: String
    /// The user the server authenticated the peer's session as; nil on a server without authentication.
    public var user: String?
    /// The value the peer published (a name, a colour, a cursor: whatever the app put there).
    public var value: JSON

    /// A peer.
    public init(id: String, user: String? = nil, value: JSON) {
        self.id = id
        self.user = user
        self.value = value
    }
}
