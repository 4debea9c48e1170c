/// What a server's accepting `SessionCreateReply` tells the client: the session token and the
/// Contrail extensions the server understands (empty for a Jetstream server).
package struct SessionAccepted: Sendable {
    /// The session token (a bearer secret: never log it).
    package let token: String
    /// Extra message types the server listed, e.g. `"ScopeDetach"`.
    package let extensions: Set<String>
    /// The message limits the server advertised (Protocol §8.19); nil from a Jetstream server.
    package let limits: SessionLimits?

    package init(token: String, extensions: Set<String>, limits: SessionLimits? = nil) {
        self.token = token
        self.extensions = extensions
        self.limits = limits
    }
}
