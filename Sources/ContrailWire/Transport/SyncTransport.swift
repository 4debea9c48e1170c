import ContrailSupport

/// A bidirectional channel of text frames between a sync client and a sync server (each frame is
/// one JSON message or an array of them, Protocol §1.2). WebSocket is the default; an
/// in-memory pair lets tests and apps run client and server in one process.
public protocol SyncTransport: AnyObject, Sendable {
    /// The frames received, in order. Finishes when the peer closes normally; throws
    /// `TransportClosed` when it closes with a code (4096 denied, 4097 expired, 4098 bad input…)
    /// or the connection fails.
    var frames: TypedAsyncStream<String, TransportClosed> { get }
    /// Sends one frame. Throws once the transport is closed.
    func send(_ frame: String) async throws(TransportClosed)
    /// Sends one frame on the calling thread if the transport can take it without waiting, and
    /// says whether it did (false: nothing was sent; use ``send(_:)``). Throws once the transport
    /// is closed. Transports that always wait keep the default, which sends nothing.
    func sendWithoutWaiting(_ frame: String) throws(TransportClosed) -> Bool
    /// Closes the transport with a WebSocket close code and reason.
    func close(code: UInt16, reason: String) async
}

extension SyncTransport {
    /// Sends nothing: the frame goes through ``send(_:)``.
    public func sendWithoutWaiting(_ frame: String) throws(TransportClosed) -> Bool { false }
}

/// Opens transports to one server, for the first connection and every reconnect.
public protocol SyncConnector: Sendable {
    /// Connects, passing connect-time parameters (Protocol §1.3) such as `X-Jetstream-SessionToken`
    /// as headers. Throws `SyncError.transport` (or another `SyncError`) when it cannot connect.
    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport
    /// The server of the last connect cannot serve sessions now (`SyncError.serverUnavailable`):
    /// a connector with several servers moves on to the next one. Does nothing by default.
    func serverUnavailable()
}

extension SyncConnector {
    /// One server: nothing to move on to.
    public func serverUnavailable() {}
}

/// Why a transport ended: the close code and reason the peer sent, if any.
public struct TransportClosed: Error, Equatable, Sendable, CustomStringConvertible {
    /// The WebSocket close code the peer sent; nil when the connection failed without one.
    public var code: UInt16?
    /// The close reason, or what failed.
    public var reason: String
    /// Whether this side ended the transport because the peer sent a message larger than it takes
    /// (a WebSocket frame or message over its limit: close code 1009 sent, `code` nil).
    public var messageTooLarge: Bool

    /// A closed transport with this code and reason.
    public init(code: UInt16?, reason: String, messageTooLarge: Bool = false) {
        self.code = code
        self.reason = reason
        self.messageTooLarge = messageTooLarge
    }

    /// "transport closed with code C: reason".
    public var description: String {
        "transport closed" + (code.map { " with code \($0)" } ?? "") + (reason.isEmpty ? "" : ": \(reason)")
    }
}
