/// A change of a scope's peers (``ScopePresence``).
public enum PresenceEvent: Sendable, Equatable {
    /// A peer published its first value (or is seen again, after a reconnect).
    case joined(PresencePeer)
    /// A peer published a new value.
    case changed(PresencePeer)
    /// A peer left: disconnected, detached the scope, withdrew its value, or went silent for the
    /// server's timeout; also every peer when this replica loses its connection. It carries the
    /// peer's last value.
    case left(PresencePeer)

    /// The peer the event is about.
    public var peer: PresencePeer {
        switch self {
        case .joined(let peer), .changed(let peer), .left(let peer): return peer
        }
    }
}
