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
    /// A declared scope's name (``ServerOptions/scopes``) breaks the rule for names (1 to 200
    /// bytes of UTF-8, no control characters).
    case invalidScopeName(name: String, reason: String)
    /// A scope's log in the data directory records another scope's name (a file name collision).
    case scopeFileMismatch(scope: String, recorded: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .persistence(let scope, let reason): return "scope '\(scope)' storage failed: \(reason)"
        case .dataDirectory(let path, let reason): return "data directory \(path) is not usable: \(reason)"
        case .listener(let reason): return "cannot listen: \(reason)"
        case .stopped: return "the server is stopped"
        case .tooManyOpenScopes(let limit): return "the server holds its maximum of \(limit) open scopes"
        case .invalidScopeName(let name, let reason): return "scope name '\(name.prefix(64))' is not valid: \(reason)"
        case .scopeFileMismatch(let scope, let recorded):
            return "the log file of scope '\(scope)' belongs to scope '\(recorded.prefix(64))'"
        }
    }
}
