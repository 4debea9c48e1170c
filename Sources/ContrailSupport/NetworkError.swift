/// What can go wrong below a protocol: resolving a name, connecting, reading and writing a socket,
/// running an event loop. `WebSocketError` and `NATSError` wrap it with their own context.
public enum NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing listens at this address.
    case connectionRefused(host: String, port: UInt16)
    /// The host name could not be resolved.
    case unknownHost(String)
    /// An operation did not finish in time; the string names it.
    case timedOut(String)
    /// The connection or the event loop is closed; the string says which.
    case closed(String)
    /// A system call failed.
    case io(errno: Int32, String)
    /// A second consumer asked for the next input while another one was already waiting for it.
    case concurrentConsumer

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .connectionRefused(let host, let port):
            "Connection refused by \(host):\(port): is the server running and listening on that port?"
        case .unknownHost(let host):
            "Unknown host '\(host)': the name could not be resolved"
        case .timedOut(let what):
            "Timed out: \(what)"
        case .closed(let what):
            what
        case .io(let errno, let what):
            "\(what) failed: \(Self.errnoText(errno)) (errno \(errno))"
        case .concurrentConsumer:
            "Another task is already waiting for this connection's next message: use one consumer at a time"
        }
    }

    private static func errnoText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "unknown error" }
        return String(cString: text)
    }
}
