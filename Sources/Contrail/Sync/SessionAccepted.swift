/// What a server's accepting `SessionCreateReply` tells the client: the session token and the
/// Contrail extensions the server understands (empty for a Jetstream server).
package struct SessionAccepted: Sendable {
    /// The session token (a bearer secret: never log it).
    package let token: String
    /// Extra message types the server listed, e.g. `"ScopeDetach"`.
    package let extensions: Set<String>

    package init(token: String, extensions: Set<String>) {
        self.token = token
        self.extensions = extensions
    }
}
