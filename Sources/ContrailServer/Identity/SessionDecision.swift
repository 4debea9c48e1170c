/// What ``ServerOptions/sessionHook`` decides about a `SessionCreate`.
///
/// ```swift
/// options.sessionHook = { params, _ in params["token"] == "secret" ? .allowEverything : .deny() }
/// ```
public enum SessionDecision: Sendable, Equatable {
    /// A session acting as `identity`.
    case allow(SessionIdentity)
    /// No session: the client gets `SessionCreateReply` with the error "Session creation denied"
    /// (followed by ": reason" and the type `session-creation-denied` when a reason is given), then
    /// close 4096. The reason reaches the client and the log: never put a secret in it.
    case deny(reason: String? = nil)

    /// A session with every scope writable (``SessionIdentity/unrestricted``).
    public static let allowEverything = SessionDecision.allow(.unrestricted)
}
