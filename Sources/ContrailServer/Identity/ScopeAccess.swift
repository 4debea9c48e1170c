/// What a grant lets a session do with a scope: ``read`` (fetch it and receive its broadcasts) or
/// ``write`` (also send `ScopeSync`); `write` implies `read`.
public enum ScopeAccess: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Fetch the scope and receive its broadcasts.
    case read = 1
    /// Everything `read` allows, and change the scope (`ScopeSync`).
    case write = 2

    /// Orders `read` below `write`.
    public static func < (lhs: ScopeAccess, rhs: ScopeAccess) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `read` or `write`.
    public var description: String { self == .read ? "read" : "write" }
}
