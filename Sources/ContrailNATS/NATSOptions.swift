/// How a `NATSConnection` connects, reconnects and bounds its buffers.
public struct NATSOptions: Sendable {
    /// The servers to try, in order; on losing one the connection moves to the next.
    public var servers: [NATSServerURL]
    /// The user and password, token, nkey or user JWT sent in `CONNECT` (none by default); on every
    /// reconnect too.
    public var credentials: NATSCredentials = .none
    /// TLS to every server, verified with this configuration (CA bundle, pins) against the URL's host;
    /// nil: TLS only to `tls://` servers, verified with the system's roots. A server that does not offer
    /// TLS when it is wanted is refused (no silent downgrade).
    public var tls: TLSClientConfiguration? = nil
    /// TLS before the server's `INFO`, for servers configured with `tls { handshake_first: true }`
    /// (they send nothing until the client's TLS handshake). Implies TLS to every server (verified with
    /// `tls`, or the system's roots when nil). A plain server never answers it: the connect times out.
    public var tlsHandshakeFirst = false
    /// Whether this connection's own publishes are delivered to its own matching subscriptions
    /// (`echo` in `CONNECT`; NATS' default). False: only other connections' messages arrive, so a
    /// cluster server is not woken by the log messages it appended itself.
    public var echo = true
    /// The client name the server shows in its monitoring.
    public var name: String = "contrail"
    /// How long one TCP connect plus the INFO/CONNECT/PING handshake may take.
    public var connectTimeout: Duration = .seconds(5)
    /// The default deadline of a request (and of waiting for a reconnect before a publish).
    public var requestTimeout: Duration = .seconds(5)
    /// The pause after trying every server once without success.
    public var reconnectWait: Duration = .milliseconds(200)
    /// Rounds over the server list before giving up and closing; nil retries forever.
    public var maxReconnectRounds: Int? = nil
    /// How often the connection pings the server; a `PONG` missing for two intervals drops the
    /// connection (a server that hangs or a network that silently loses it) and reconnects.
    public var pingInterval: Duration = .seconds(20)
    /// Messages a subscription buffers for a slow reader; later ones are dropped and counted.
    public var subscriptionBufferLimit: Int = 65_536
    /// Bytes queued for the socket before a publisher waits.
    public var writeHighWater: Int = 1 << 20
    /// Bytes received and not yet parsed before the socket stops being read.
    public var readHighWater: Int = 4 << 20

    /// Options for these servers with default limits.
    public init(servers: [NATSServerURL]) {
        self.servers = servers
    }
}
