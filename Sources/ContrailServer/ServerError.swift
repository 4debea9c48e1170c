/// Why the server could not do something.
public enum ServerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A scope's log in the data directory could not be read or written.
    case persistence(scope: String, reason: String)
    /// The data directory could not be created or used.
    case dataDirectory(path: String, reason: String)
    /// The WebSocket listener could not start.
    case listener(String)
    /// The server was stopped.
    case stopped
    /// The server holds its maximum of loaded scopes (``ServerOptions/maxOpenScopes``).
    case tooManyOpenScopes(limit: Int)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .persistence(let scope, let reason): return "scope '\(scope)' storage failed: \(reason)"
        case .dataDirectory(let path, let reason): return "data directory \(path) is not usable: \(reason)"
        case .listener(let reason): return "cannot listen: \(reason)"
        case .stopped: return "the server is stopped"
        case .tooManyOpenScopes(let limit): return "the server holds its maximum of \(limit) open scopes"
        }
    }
}
