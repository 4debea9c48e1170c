/// Everything that can go wrong talking to NATS or JetStream.
public enum NATSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A server URL could not be parsed; the string says what is wrong.
    case invalidURL(String)
    /// A subject, key or stream name is not valid for NATS; the string names it.
    case invalidName(String)
    /// No server in the list could be reached; carries the last failure.
    case connectionFailed(String)
    /// The server sent bytes that break the NATS protocol (or one of our buffer limits).
    case protocolViolation(String)
    /// The server answered `-ERR`; carries its message.
    case serverError(String)
    /// An operation did not finish in time; the string names it.
    case timedOut(String)
    /// The connection was lost while the operation was in flight (its outcome is unknown).
    case disconnected
    /// The connection was closed by `close()`.
    case closed
    /// Nobody is subscribed to the subject of a request (the server answered status 503).
    case noResponders(subject: String)
    /// A payload is larger than the server's `max_payload` (size, limit).
    case payloadTooBig(size: Int, limit: Int)
    /// A JetStream API call failed; see `JetStreamAPIError` for the codes.
    case jetStream(JetStreamAPIError)
    /// A response could not be decoded; the string says what was expected.
    case invalidResponse(String)
    /// A URL held a user, password or token (refused: a URL shows in process lists and logs).
    case credentialsInURL
    /// Credentials from a file or the environment are malformed; the string says how (never the secret).
    case invalidCredentials(String)
    /// The server refused the credentials (or their absence); carries its message.
    case authorizationFailed(String)
    /// The server requires TLS and the connection was not asked for it (a `nats://` URL without
    /// `NATSOptions.tls`); carries the server.
    case tlsRequired(String)
    /// TLS to the server failed: its certificate was refused (untrusted, expired, wrong host), the
    /// handshake failed, or the server does not offer TLS though it was asked for.
    case tls(TLSError)

    /// The JetStream error code (`err_code`), if this is a JetStream API error.
    public var jetStreamErrorCode: Int? {
        if case .jetStream(let error) = self { error.errorCode } else { nil }
    }

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .invalidURL(let why): "Invalid NATS URL: \(why)"
        case .invalidName(let why): "Invalid NATS name: \(why)"
        case .connectionFailed(let why): "Could not connect to any NATS server: \(why)"
        case .protocolViolation(let why): "NATS protocol violation: \(why)"
        case .serverError(let message): "The NATS server reported an error: \(message)"
        case .timedOut(let what): "Timed out: \(what)"
        case .disconnected: "The NATS connection was lost while the operation was in flight"
        case .closed: "The NATS connection is closed"
        case .noResponders(let subject): "No responders on NATS subject '\(subject)' (is JetStream enabled and the stream created?)"
        case .payloadTooBig(let size, let limit): "The payload is too big for the server (\(size) bytes, limit \(limit))"
        case .jetStream(let error): error.description
        case .invalidResponse(let why): "Invalid NATS response: \(why)"
        case .credentialsInURL:
            "Credentials in a NATS URL are refused (a URL shows in process lists and logs): put them in a file "
                + "(contrail serve --nats-credentials FILE) or in the environment (\(NATSCredentials.userVariable) and "
                + "\(NATSCredentials.passwordVariable), or \(NATSCredentials.tokenVariable))"
        case .invalidCredentials(let why): "Invalid NATS credentials: \(why)"
        case .authorizationFailed(let why): "The NATS server refused the credentials: \(why)"
        case .tlsRequired(let server):
            "The NATS server \(server) requires TLS: connect with a tls:// URL (contrail serve --nats tls://..., "
                + "--nats-ca FILE for a private CA)"
        case .tls(let error): "TLS to the NATS server failed: \(error)"
        }
    }
}
