/// What a server's accepting `SessionCreateReply` tells the client: the session token and the
/// Contrail extensions the server understands (empty for a Jetstream server).
struct SessionAccepted: Sendable {
    /// The session token (a bearer secret: never log it).
    let token: String
    /// Extra message types the server listed, e.g. `"ScopeDetach"`.
    let extensions: Set<String>
}
