/// How a `Client` connects, keeps its session alive and reconnects.
///
/// ```swift
/// var options = ClientOptions()
/// options.sessionParams = ["token": "secret"]
/// let client = Client(url: "ws://127.0.0.1:3000", options: options)
/// ```
public struct ClientOptions: Sendable {
    /// Parameters of `SessionCreate`, handed to the server's session hook (an auth token, say).
    public var sessionParams: [String: JSON] = [:]
    /// Extra headers on every connect (`X-Jetstream-…` parameters, Protocol §1.3).
    public var headers: [(String, String)] = []
    /// The protocol version sent in `SessionCreate` (semver).
    public var version = "0.2.0"
    /// How often the client pings (with its acknowledgement).
    public var pingInterval: Duration = .seconds(10)
    /// How long a change set may wait for its reply before the client reconnects and resends; a
    /// second timeout of the same request starts a new session.
    public var replyTimeout: Duration = .seconds(30)
    /// How long `connect()` waits for the session and `fetch` for the scope's state before they
    /// throw `SyncError.timedOut`.
    public var connectTimeout: Duration = .seconds(30)
    /// Backoff between reconnect attempts.
    public var reconnect = ReconnectPolicy()
    /// At most this many change sets wait for replies at once; later ones wait in the queue.
    public var maxPendingMessages = 1000
    /// After a fatal close (4096 denied, 4097 expired), open a new session, refetch every scope and
    /// re-send pending change sets. Without it the client goes offline.
    public var restartSessionOnFatalError = true
    /// The clock the client waits on: reply and connect timeouts, reconnect backoff, keep-alive
    /// pings, and the deadlines of `Session.sync` and `Session.detach`. A test passes a virtual-time
    /// clock to run all of these without waiting.
    public var clock: any Clock<Duration> = ContinuousClock()
    /// How a `wss://` server is verified: the system's roots (honouring `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR`) unless `caBundlePath` names a PEM bundle, and the public-key pins if any.
    /// Failures reach the status as `SyncError.transport` naming the `TLSError`.
    public var tls = TLSClientConfiguration()
    /// Whether collections go as edits to a server that takes them (Protocol §8.24); off, they go
    /// whole with their bases, as to an original server (the fuzzer mixes both kinds of peer).
    package var sendsCollectionEdits = true
    /// The largest message (and WebSocket frame) taken from the server, in bytes (16 MiB by
    /// default). A scope's state from a server that cannot send it in parts (an original Jetstream
    /// server, Protocol §8.25) must fit: a larger one fails its fetch with
    /// `SyncError.stateTooLarge(limit:)`.
    public var maxMessageBytes = 16 << 20

    /// Whether consecutive pending change sets that may be merged go as one message
    /// (``ChangeSetBatch``); off, every change set goes alone (the coalescing tests compare both).
    package var coalescesChangeSets = true

    /// Default options.
    public init() {}

    /// Default options waiting on `clock`.
    public init(clock: any Clock<Duration>) {
        self.clock = clock
    }

    /// Options with session parameters (an auth token, say) and extra connect headers.
    public init(sessionParams: [String: JSON], headers: [(String, String)] = []) {
        self.sessionParams = sessionParams
        self.headers = headers
    }
}
