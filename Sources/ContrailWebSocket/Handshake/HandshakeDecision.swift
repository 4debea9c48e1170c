/// What a server's handshake hook decides for one incoming connection.
public enum HandshakeDecision: Sendable {
    /// Accept the upgrade.
    case accept
    /// Accept the upgrade and add these headers to the 101 response.
    case acceptWith(headers: [(String, String)])
    /// Refuse with an HTTP status, e.g. `.reject(status: 403, reason: "Forbidden")`; the client gets
    /// `WebSocketError.handshakeFailed` with that status line.
    case reject(status: Int, reason: String)
}
