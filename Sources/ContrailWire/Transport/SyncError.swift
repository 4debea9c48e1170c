/// Why a sync operation failed.
public enum SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server denied the session (its session hook said no); the server's message.
    case sessionDenied(String)
    /// The server cannot serve sessions now (in a cluster, it cannot reach NATS); the server's
    /// message. A reconnecting client tries again after its backoff, on the next server of its list.
    case serverUnavailable(String)
    /// The server refused a scope fetch with this error (its fetch hook said no).
    case fetchFailed(WireErrorBody)
    /// The client was closed, or the session ended before the operation finished.
    case closed
    /// The server did not answer in time.
    case timedOut
    /// The transport could not connect or failed; the underlying reason.
    case transport(String)
    /// The server closed the connection with a WebSocket close code and reason.
    case closedByServer(code: UInt16, reason: String)
    /// The scope has no root object, so a fetched state has nowhere to go.
    case scopeHasNoRoot(String)
    /// The scope was never fetched into this session (or was detached), so it cannot be synced.
    case notFetched(String)
    /// The waiting task was cancelled.
    case cancelled
    /// The fetched state could not be applied to the local model (unknown class, bad value…).
    case invalidState(String)
    /// The server does not offer this Contrail extension (an original Jetstream server, or one
    /// that cannot do it: `MarkRevision` needs a server that keeps history); its name.
    case extensionUnavailable(String)
    /// The server refused to mark a revision (§8.26): a label in use or not a label, a scope the
    /// session may not write; nothing was marked.
    case revisionRefused(WireErrorBody)
    /// A scope's state came as one message larger than the client takes (`limit` bytes,
    /// `ClientOptions.maxMessageBytes`): a server that cannot send it in parts (an original
    /// Jetstream server, §8.25). The fetch is not tried again; raise the limit to take it.
    case stateTooLarge(limit: Int)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .sessionDenied(let message): return "session denied by the server: \(message)"
        case .serverUnavailable(let message): return "the server cannot serve sessions now: \(message)"
        case .fetchFailed(let error): return "scope fetch failed: \(error)"
        case .closed: return "the client is closed"
        case .timedOut: return "the server did not answer in time"
        case .transport(let reason): return "transport failed: \(reason)"
        case .closedByServer(let code, let reason):
            return "the server closed the connection with code \(code)" + (reason.isEmpty ? "" : ": \(reason)")
        case .scopeHasNoRoot(let name): return "scope '\(name)' has no root object: set scope.root before fetching"
        case .notFetched(let name): return "scope '\(name)' is not fetched in this session: fetch it first"
        case .cancelled: return "the operation was cancelled"
        case .invalidState(let reason): return "the server's scope state could not be applied: \(reason)"
        case .extensionUnavailable(let name): return "the server does not offer the \(name) extension"
        case .revisionRefused(let error): return "the server marked no revision: \(error.message)"
        case .stateTooLarge(let limit):
            return "the scope's state is larger than the client's message limit of \(limit) bytes: raise ClientOptions.maxMessageBytes to fetch it"
        }
    }
}
