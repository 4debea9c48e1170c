/// Everything that can go wrong with a WebSocket, from a bad URL to a peer that breaks the protocol.
///
/// Errors found while decoding what the peer sent are `protocolViolation`, carrying the close code
/// the connection should send back (`closeCode`) and why.
public enum WebSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer broke RFC 6455 (or one of our limits); close the connection with this code.
    case protocolViolation(CloseCode, String)
    /// The URL could not be parsed; the string says what is wrong.
    case invalidURL(String)
    /// The URL's scheme is not supported (only `ws` and `wss` are).
    case unsupportedScheme(String)
    /// TLS failed: the server's certificate was refused (expired, untrusted, wrong host, pin mismatch)
    /// or the TLS handshake or connection failed; the `TLSError` names the reason.
    case tls(TLSError)
    /// The server refused the upgrade; carries its status line, e.g. `"HTTP/1.1 403 Forbidden"`.
    case handshakeFailed(status: String)
    /// The opening handshake was malformed (missing or wrong headers, bad accept key, ...).
    case invalidHandshake(String)
    /// Nothing listens at this address.
    case connectionRefused(host: String, port: UInt16)
    /// The host name could not be resolved.
    case unknownHost(String)
    /// An operation did not finish in time; the string names it.
    case timedOut(String)
    /// The connection is closed (with the close code and reason, if any).
    case closed(CloseCode?, String)
    /// A system call failed.
    case io(errno: Int32, String)
    /// A message we were asked to send is larger than the configured limit (its size in bytes).
    case messageTooBig(Int)
    /// A second consumer asked for the next message while another one was already waiting for it
    /// (`messages` or `receive()` allow one consumer at a time).
    case concurrentConsumer

    /// The close code to send to the peer because of this error, if it is one that ends the connection
    /// with a close frame: the code of a `protocolViolation`, `messageTooBig` (1009) for an oversized message.
    public var closeCode: CloseCode? {
        switch self {
        case .protocolViolation(let code, _): code
        case .messageTooBig: .messageTooBig
        default: nil
        }
    }

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .protocolViolation(let code, let why):
            "WebSocket protocol violation (close code \(code)): \(why)"
        case .invalidURL(let why):
            "Invalid WebSocket URL: \(why)"
        case .unsupportedScheme(let scheme):
            "Unsupported URL scheme '\(scheme)': only ws:// and wss:// are supported"
        case .tls(let error):
            error.description
        case .handshakeFailed(let status):
            "The server refused the WebSocket handshake: \(status)"
        case .invalidHandshake(let why):
            "Invalid WebSocket handshake: \(why)"
        case .connectionRefused(let host, let port):
            NetworkError.connectionRefused(host: host, port: port).description
        case .unknownHost(let host):
            NetworkError.unknownHost(host).description
        case .timedOut(let what):
            NetworkError.timedOut(what).description
        case .closed(let code, let reason):
            if let code {
                reason.isEmpty ? "The WebSocket connection is closed (\(code))"
                    : "The WebSocket connection is closed (\(code)): \(reason)"
            } else {
                reason.isEmpty ? "The WebSocket connection is closed" : "The WebSocket connection is closed: \(reason)"
            }
        case .io(let errno, let what):
            NetworkError.io(errno: errno, what).description
        case .messageTooBig(let size):
            "The message is too big to send (\(size) bytes): raise maxMessageSize or split it"
        case .concurrentConsumer:
            NetworkError.concurrentConsumer.description
        }
    }
}

extension WebSocketError {
    /// The same failure as a WebSocket error: a closed socket or loop is `.closed` with no code.
    public init(_ error: NetworkError) {
        switch error {
        case .connectionRefused(let host, let port): self = .connectionRefused(host: host, port: port)
        case .unknownHost(let host): self = .unknownHost(host)
        case .timedOut(let what): self = .timedOut(what)
        case .closed(let what): self = .closed(nil, what)
        case .io(let errno, let what): self = .io(errno: errno, what)
        case .concurrentConsumer: self = .concurrentConsumer
        }
    }
}
extension WebSocketError: InboundQueueFailure {}
