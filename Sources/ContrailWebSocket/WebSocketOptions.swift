/// Settings for a WebSocket connection (client or server side).
///
/// ```swift
/// var options = WebSocketOptions()
/// options.headers = [("Authorization", "Bearer \(token)")]
/// options.pingInterval = .seconds(20)
/// let connection = try await WebSocketConnection.connect(to: "ws://example.com/sync", options: options)
/// ```
public struct WebSocketOptions: Sendable {
    /// How long the TCP connect (including DNS) may take. Client only.
    public var connectTimeout: Duration = .seconds(10)
    /// A local IP address to bind the socket to before connecting: the source address the server
    /// sees (a host with several addresses; tests use 127.x.y.z). Nil lets the system choose. Client only.
    public var localAddress: String? = nil
    /// How long the opening handshake may take once TCP is up, on both sides: a server drops a client
    /// that has not sent a complete request by then.
    public var handshakeTimeout: Duration = .seconds(10)
    /// How long to wait for the peer's side of the closing handshake before dropping the connection.
    public var closeTimeout: Duration = .seconds(5)
    /// The largest frame payload accepted; larger frames close the connection with 1009.
    public var maxFrameSize: Int = 16 << 20
    /// The largest message accepted (after reassembly) or sent; larger ones close the connection with 1009.
    public var maxMessageSize: Int = 16 << 20
    /// Extra request headers (e.g. a session token). Client only.
    public var headers: [(String, String)] = []
    /// Subprotocols: offered in order by a client; on a server, the ones it supports (the first the
    /// client offered that is in this list is chosen).
    public var subprotocols: [String] = []
    /// Send a ping this often while connected (nil: never).
    public var pingInterval: Duration? = nil
    /// With `pingInterval`: if nothing at all arrives within this time after a ping, the peer is presumed
    /// dead and the connection is dropped with `WebSocketError.timedOut`.
    public var pongTimeout: Duration = .seconds(10)
    /// `send` suspends while more than this many bytes wait to be written (back-pressure).
    public var writeBufferHighWater: Int = 1 << 20
    /// Reading pauses while more than this many received bytes wait for the app to take them from
    /// `messages` (TCP then slows the sender down).
    public var readBufferHighWater: Int = 4 << 20

    /// How a `wss://` client verifies the server: the system's roots by default, or a CA bundle, and
    /// optional public-key pins. Client only.
    public var tls = TLSClientConfiguration()
    /// Server only: serve TLS with this certificate and key (reloadable: new connections use the last
    /// loaded); nil serves plain TCP.
    public var serverTLS: TLSServerContext? = nil

    /// One event loop to run everything on (a server's listener and all its connections, or a client):
    /// nil spreads connections over `eventLoopGroup`. The connections' timers (connect, handshake, close
    /// and keep-alive) follow that loop's clock: a loop made with a virtual clock
    /// (`EventLoop(clock:)`) runs them in virtual time.
    public var eventLoop: EventLoop? = nil

    /// Server only: answers plain HTTP requests (no `Upgrade: websocket`) beside the upgrade, e.g. web
    /// pages; nil rejects them with 400 as before.
    public var httpResponder: HTTPResponder? = nil
    /// Server only: how long `httpResponder` may take once a request has fully arrived (its arrival is
    /// bounded by `handshakeTimeout`); past it the client gets 503.
    public var httpResponseTimeout: Duration = .seconds(30)
    /// Server only: consulted before the body of a plain HTTP request is read (nil reads every body
    /// up to `maxMessageSize`), so that a client without a credential cannot make the server buffer
    /// one.
    public var httpBodyGate: HTTPBodyGate? = nil
    /// The loops connections are spread over when `eventLoop` is nil: nil means `EventLoopGroup.shared`
    /// (one loop per core).
    public var eventLoopGroup: EventLoopGroup? = nil

    /// The loop for a new connection: `eventLoop`, else the next loop of the group.
    var nextLoop: EventLoop { eventLoop ?? (eventLoopGroup ?? .shared).next() }

    /// Where a server reports a condition worth an operator's attention, one line at a time (e.g. running
    /// out of descriptors: once when accepting pauses, once when it resumes). Standard error by default.
    public var log: @Sendable (String) -> Void = WebSocketOptions.standardError

    /// Writes `line` and a newline to standard error in one `write(2)`.
    public static let standardError: @Sendable (String) -> Void = OperatorLog.standardError

    /// Default settings.
    public init() {}
}
