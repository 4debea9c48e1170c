import Contrail
import Foundation

/// How a ``ContrailServer`` listens, stores, limits and decides.
///
/// ```swift
/// var options = ServerOptions()
/// options.dataDirectory = URL(filePath: "/var/lib/contrail")
/// options.sessionHook = { params, _ in params["token"] == "secret" }
/// let server = try ContrailServer(options: options)
/// ```
public struct ServerOptions: Sendable {
    /// The address the WebSocket listener binds to. Loopback unless told otherwise (§8.8); put
    /// TLS termination in front of the server when exposing it.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one (``ContrailServer/start()`` returns it).
    public var port: UInt16 = 0
    /// Where scopes are persisted, one log file per scope; nil keeps everything in memory.
    public var dataDirectory: URL?
    /// When appended change sets are forced to disk. Every accepted change set is written to the
    /// OS before it is acknowledged, whatever the policy.
    public var fsync: FsyncPolicy = .interval(.milliseconds(200))
    /// A session expires after this long without any message from its client (closed with 4097).
    public var sessionExpiry: Duration = .seconds(600)
    /// A new connection must send `SessionCreate` within this time (else closed with 4096).
    public var establishTimeout: Duration = .seconds(10)
    /// The server pings each attached connection about this often (±10 %).
    public var pingInterval: Duration = .seconds(10)
    /// The largest frame accepted, in bytes (larger: close 4098).
    public var maxMessageBytes = 16 << 20
    /// The most fragments one `ScopeSync` may carry (more: every fragment is rejected).
    public var maxFragmentsPerMessage = 10_000
    /// The most objects one scope may hold (adds past it are rejected).
    public var maxObjectsPerScope = 1_000_000
    /// The most unacknowledged messages kept per session for resend; past it the session is ended
    /// (close 4097) and its client starts a new one and refetches.
    public var maxResendBuffer = 100_000
    /// Decides on `SessionCreate` from its params and the connection's headers; false denies
    /// ("Session creation denied").
    public var sessionHook: @Sendable (_ params: [String: JSON], _ headers: [(String, String)]) async -> Bool = { _, _ in true }
    /// Decides on every connection, new or resuming (§8.8), from its headers; false closes it
    /// with 4096 `rejected`.
    public var connectionHook: @Sendable (_ headers: [(String, String)]) async -> Bool = { _ in true }
    /// Scopes to create (or restore from `dataDirectory`) when the server is made, before any
    /// fetch. Other scopes are created on their first allowed fetch.
    public var scopes: [String] = []
    /// Decides on `ScopeFetch`; return an error to deny, nil to allow. Scopes are created on
    /// their first allowed fetch.
    public var fetchHook: @Sendable (_ scopeName: String, _ params: [String: JSON]) async -> WireErrorBody? = { _, _ in nil }
    /// Procedures clients may call (§4.6–4.7): a ScopeSync naming another, or whose fragments do
    /// not match the named one's constraints, is rejected whole.
    public var procedures: [ServerProcedure] = []
    /// Roots of new scopes by scope name: a fresh scope's root gets this class and these values
    /// (as the original's app-set root model), instead of waiting for a client to name them.
    public var roots: [String: ScopeRoot] = [:]
    /// Receives one line per session event and per error; nil silences the server. Default: stderr.
    public var log: (@Sendable (String) -> Void)? = ServerLog.standardError

    /// The defaults: loopback, a free port, in memory.
    public init() {}

    var limits: ServerLimits {
        ServerLimits(maxMessageBytes: maxMessageBytes, maxFragmentsPerMessage: maxFragmentsPerMessage,
                     maxObjectsPerScope: maxObjectsPerScope, maxResendBuffer: maxResendBuffer)
    }
}
