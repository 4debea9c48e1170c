/// Why ``ScopePresence/publish(_:)`` refused a value.
public enum PresenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The value's JSON is longer than the server relays (``ScopePresence/maxValueBytes``).
    case valueTooLarge(bytes: Int, limit: Int)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .valueTooLarge(let bytes, let limit):
            return "presence value of \(bytes) bytes is over the limit of \(limit) bytes"
        }
    }
}
