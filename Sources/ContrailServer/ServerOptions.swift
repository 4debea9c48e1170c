import ContrailSupport
import ContrailWire
import Foundation

/// How a ``ContrailServer`` listens, stores, limits and decides.
///
/// ```swift
/// var options = ServerOptions()
/// options.dataDirectory = URL(filePath: "/var/lib/contrail")
/// options.sessionHook = { params, _ in params["token"] == "secret" ? .allowEverything : .deny() }
/// let server = try ContrailServer(options: options)
/// ```
public struct ServerOptions: Sendable {
    /// The address the WebSocket listener binds to. Loopback unless told otherwise (§8.8); serve
    /// TLS (``tls``) or put TLS termination in front of the server when exposing it.
    public var host = "127.0.0.1"
    /// Serve TLS (`wss://`, and the pages over `https://`) with this certificate chain and key; nil
    /// serves plain TCP. ``TLSServerContext/reload()`` swaps in new files for new connections.
    public var tls: TLSServerContext? = nil
    /// The port to listen on; 0 picks a free one (``ContrailServer/start()`` returns it).
    public var port: UInt16 = 0
    /// Where scopes are persisted, one log file per scope; nil keeps everything in memory.
    public var dataDirectory: URL?
    /// When accepted change sets are forced to disk. The default, ``FsyncPolicy/everyRecord``,
    /// acknowledges (and broadcasts) a change set only once its record is synced (`fdatasync`),
    /// with group commit: change sets arriving together share one sync. ``FsyncPolicy/interval(_:)``
    /// is the explicit buffered opt-in: acknowledged once written to the OS (survives a crash of the
    /// server process, not a power loss of the last interval). ``FsyncPolicy/never`` never syncs.
    public var fsync: FsyncPolicy = .everyRecord
    /// A session expires after this long without any message from its client (closed with 4097).
    public var sessionExpiry: Duration = .seconds(600)
    /// The most memory that sessions waiting for their client to come back (connection gone, not yet
    /// expired) may hold together, estimated as ``SessionTicker/waitingSessionOverhead`` per session plus
    /// its unacknowledged messages. Past it the sessions that have waited longest end first (close code
    /// 4097 when they resume, logged), so churn of clients that never return cannot grow the server
    /// without bound. Default 512 MiB (some 60,000 waiting sessions with empty resend buffers).
    public var maxWaitingSessionBytes = 512 << 20
    /// A new connection must send `SessionCreate` within this time (else closed with 4096).
    public var establishTimeout: Duration = .seconds(10)
    /// A new connection's HTTP request (a WebSocket upgrade, a page or an API call, TLS included) must
    /// have arrived within this time, else the connection is closed without an answer.
    public var handshakeTimeout: Duration = .seconds(10)
    /// The server pings each attached connection about this often (±10 %).
    public var pingInterval: Duration = .seconds(10)
    /// The largest frame accepted, in bytes (larger: close 4098).
    public var maxMessageBytes = 16 << 20
    /// The most fragments one `ScopeSync` may carry (more: every fragment is rejected).
    public var maxFragmentsPerMessage = 10_000
    /// The most objects one scope may hold (adds past it are rejected).
    public var maxObjectsPerScope = 1_000_000
    /// The most bytes of unacknowledged messages kept per session for resend (estimated from the
    /// fragment text, which dominates). Past it the session is ended with close code 4097 and a
    /// `limit-exceeded` reason, and its client starts a new one and refetches. This bounds what a
    /// slow or absent reader costs the server.
    public var maxResendBytes = 16 << 20
    /// A fetched state larger than this many objects goes in parts (`ScopeStateChunk`, Protocol
    /// §8.25) to a client that asks for them; at most this many objects per part.
    public var stateChunkObjects = 5_000
    /// Likewise in bytes of fragment JSON: a part ends once it reaches this size (one larger object
    /// gets a part of its own). Keep it well under half of ``maxResendBytes``.
    public var stateChunkBytes = 1 << 20
    /// The longest presence value relayed (Protocol §8.20), in bytes of its JSON; a longer one is
    /// dropped (a Contrail client refuses it before sending: the limit is advertised).
    public var maxPresenceBytes = 4_096
    /// The most presence changes per second shown per session and scope; changes in between wait,
    /// the latest replacing the earlier (advertised, so a Contrail client throttles to it too).
    public var presenceUpdatesPerSecond = 10
    /// A session from which nothing came (pings count) for this long is shown as gone from every
    /// scope's presence until it is heard again; in a cluster, a peer another server stopped
    /// refreshing leaves after it too. Keep it above the clients' ping interval (10 s).
    public var presenceTimeout: Duration = .seconds(30)
    /// With a data directory, a scope unused (no fetch or sync) for this long writes a snapshot,
    /// closes its log file and leaves memory; its next use reloads it. Subscriptions stay.
    public var scopeIdleTimeout: Duration = .seconds(60)
    /// The most scopes loaded at once (each holds its state and, with a data directory, an open
    /// file). A fetch past it is answered with a `limit-exceeded` error until idle scopes unload.
    public var maxOpenScopes = 1_000
    /// The most scopes one session may fetch; more are answered with a `limit-exceeded` error.
    public var maxScopesPerSession = 100
    /// Failed credentials (a connection the ``connectionHook`` denies, a `SessionCreate` the
    /// ``sessionHook`` denies, an unknown session token) are answered after a delay per client
    /// address: this long for an address's first failure, doubling with each further one up to
    /// ``maxFailedAttemptDelay``; an address quiet for twice that is forgotten. Valid credentials
    /// are never delayed or refused, whatever other clients at the same address do; malformed or
    /// slow handshakes are closed at once and do not count.
    public var failedAttemptDelay: Duration = .milliseconds(250)
    /// The longest delay of ``failedAttemptDelay``.
    public var maxFailedAttemptDelay: Duration = .seconds(30)
    /// Delayed answers one client address may have waiting at once; its failures past this are
    /// answered (and closed) at once, so that waiting connections stay bounded.
    public var maxDelayedAttemptsPerSource = 4
    /// Proxies (CIDR ranges: `10.0.0.0/8`, `::1`) whose `X-Forwarded-For` names the client: a
    /// connection from one of them counts against (and is logged as) the rightmost address of that
    /// header that is not itself a trusted proxy. Any other peer's `X-Forwarded-For` is ignored.
    public var trustedProxies: [AddressRange] = []
    /// Decides on `SessionCreate` from its params and the connection's headers (a token travels
    /// in params, e.g. `{"token": …}`, or in an `Authorization: Bearer …` header of the upgrade):
    /// the session's ``SessionIdentity``, or a denial (the client gets the reason, then close 4096).
    /// Nil (the default): no authentication, every session is ``SessionIdentity/unrestricted`` and
    /// the inspector is open. With a hook, the inspector's overview needs an admin identity.
    public var sessionHook: (@Sendable (_ params: [String: JSON], _ headers: [(String, String)]) async -> SessionDecision)?
    /// Decides on every connection, new or resuming (§8.8), from its headers; false closes it
    /// with 4096 `rejected`.
    public var connectionHook: @Sendable (_ headers: [(String, String)]) async -> Bool = { _ in true }
    /// Scopes to create (or restore from `dataDirectory`) when the server is made, before any
    /// fetch. Others come into existence as ``scopeCreation`` says.
    public var scopes: [String] = []
    /// When a scope comes into existence (a log file, a place in memory). Default
    /// ``ScopeCreation/write``: on the first accepted write.
    public var scopeCreation: ScopeCreation = .write
    /// The most scopes that may exist (with a data directory, the scope files in it); creating one
    /// more is answered with a `limit-exceeded` error. The declared ``scopes`` count but are always
    /// created. In a cluster, the scopes this server holds. Nil: no limit.
    public var maxScopes: Int? = 100_000
    /// Decides on `ScopeFetch` after the grant check (a fetch without read access is answered
    /// with a `forbidden` error first), with the session's identity; return an error to deny, nil
    /// to allow. An allowed fetch of a scope that does not exist is answered as ``scopeCreation`` says.
    public var fetchHook: @Sendable (_ scopeName: String, _ params: [String: JSON], _ identity: SessionIdentity) async -> WireErrorBody? = { _, _, _ in nil }
    /// Serves the web pages (an inspector at `/`, a canvas demo at `/demo`, the JavaScript client at
    /// `/contrail.js`) as plain HTTP GET beside the WebSocket upgrade. `contrail serve` turns it on.
    public var servesPages = false
    /// Where `POST /api/admin/backup` (`contrail admin backup`) writes backups, each in a directory
    /// of its own; nil (the default) refuses backups over HTTP. ``ContrailServer/backup(to:)``
    /// takes any directory. `contrail serve --backup-dir`.
    public var backupDirectory: URL?
    /// Serves `/metrics` (Prometheus text format, names prefixed `contrail_`) beside the pages;
    /// with authentication on (a ``sessionHook``) it takes an admin's bearer token, as the
    /// inspector's overview. `/healthz` and `/readyz` are always served. `contrail serve --metrics`.
    public var servesMetrics = false
    /// How long ``ContrailServer/drain(timeout:)`` may take by default (`contrail serve
    /// --drain-timeout`, what SIGTERM runs); past it the process may exit: acknowledged change
    /// sets are durable already.
    public var drainTimeout: Duration = .seconds(10)
    /// How long each scope's accepted change sets stay readable after a compaction replaced the log
    /// that held them (`contrail serve --history 30d`, Protocol §8.26): each compaction keeps the
    /// log it replaces as a history segment beside the scope's log, deleted once it was closed
    /// longer ago than this. Nil (the default): the history is what the scope's log holds, the
    /// change sets since its last compaction (which runs once the log has grown to four times its
    /// compacted size and at least 1 MiB, when the scope unloads after ``scopeIdleTimeout``, when
    /// the server stops, and on `contrail admin compact`). Needs ``dataDirectory`` or ``cluster``: in
    /// a cluster, past snapshots stay in the history bucket and the log is trimmed only behind the
    /// newest snapshot older than this (every server of the cluster should have the same value).
    public var historyRetention: Duration?
    /// The wall clock of the history: the time stamped on each accepted change set and revision,
    /// and the one ``historyRetention`` is measured on. Tests pass one they move.
    public var wallClock: @Sendable () -> Date = { Date() }
    /// Joins a cluster of servers sharing every scope through NATS JetStream (`contrail serve --nats`);
    /// nil serves alone. With a cluster, scopes live in the cluster's log, not in `dataDirectory`.
    public var cluster: ClusterOptions?
    /// The event loops the server's WebSocket connections run on; nil (the default): loops of the
    /// server's own (one per core, or `CONTRAIL_EVENT_LOOPS`), stopped with it. Tests give a server one loop to know which
    /// connections share it.
    package var eventLoopGroup: EventLoopGroup? = nil
    /// Procedures clients may call (§4.6–4.7): a ScopeSync naming another, or whose fragments do
    /// not match the named one's constraints, is rejected whole.
    public var procedures: [ServerProcedure] = []
    /// Roots of new scopes by scope name: a fresh scope's root gets this class and these values
    /// (as the original's app-set root model), instead of waiting for a client to name them.
    public var roots: [String: ScopeRoot] = [:]
    /// The clock every server timer and timeout runs on: keep-alive pings, session expiry, the
    /// establish timeout, idle scopes, the delays of failed attempts, a cluster scope's catch-up
    /// retries, the end of a session whose credential expires (``SessionIdentity/expiry``). Tests
    /// pass a virtual clock to run these in virtual time.
    public var clock: any Clock<Duration> = ContinuousClock()
    /// Receives one line per session event and per error; nil silences the server. Default: stderr.
    public var log: (@Sendable (String) -> Void)? = ServerLog.standardError
    /// The shape of the lines ``log`` receives: text (the default) or one JSON object per line with
    /// `time`, `level`, `event`, `session` and `scope` (`contrail serve --log-format json`).
    public var logFormat: ServerLogFormat = .text

    /// The defaults: loopback, a free port, in memory.
    public init() {}

    var limits: ServerLimits {
        ServerLimits(maxMessageBytes: maxMessageBytes, maxFragmentsPerMessage: maxFragmentsPerMessage,
                     maxObjectsPerScope: maxObjectsPerScope, maxResendBytes: maxResendBytes,
                     maxScopesPerSession: maxScopesPerSession, maxPresenceBytes: maxPresenceBytes,
                     presenceUpdatesPerSecond: presenceUpdatesPerSecond, stateChunkObjects: max(1, stateChunkObjects),
                     stateChunkBytes: max(1, stateChunkBytes))
    }
}
