import ContrailSupport
import ContrailWire
import ContrailWebSocket
import Foundation

/// The state a server shares between its connections: sessions by token, scopes by name, live
/// connections. Lookups take a short lock; all real work happens in the scope and session actors.
final class ServerCore: Sendable {
    let options: ServerOptions
    let limits: ServerLimits
    let log: ServerLog
    /// The thread doing every scope log's I/O; nil for a server in memory.
    let logWriter: ScopeLogWriter?
    /// Loaded scopes against ``ServerOptions/maxOpenScopes``.
    let scopeSlots: ScopeSlots
    /// Failed session attempts per peer address.
    let throttle: AuthThrottle
    /// The connection to the cluster's log (`ServerOptions.cluster`), if any.
    let cluster: ClusterLink?
    /// Keep-alive pings and session expiry.
    let ticker: SessionTicker
    /// ``ServerOptions/clock``, which every server timer and timeout reads.
    let clock: ElapsedClock

    private struct State {
        var sessions: [String: ServerSession] = [:]
        var scopes: [String: any HostedScope] = [:]
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        var nextSessionNumber = 1
        var isStopped = false
    }

    private let state = SanitizerVisibleMutex(State())

    init(options: ServerOptions) {
        self.options = options
        self.limits = options.limits
        self.clock = ElapsedClock(options.clock)
        self.log = ServerLog(sink: options.log)
        self.logWriter = options.dataDirectory == nil ? nil : ScopeLogWriter(policy: options.fsync, log: log)
        self.scopeSlots = ScopeSlots(limit: options.maxOpenScopes)
        self.throttle = AuthThrottle(limit: options.maxFailedAttempts, window: options.failedAttemptWindow, clock: clock)
        self.cluster = options.cluster.map { ClusterLink(options: $0, log: ServerLog(sink: options.log)) }
        self.ticker = SessionTicker(pingInterval: options.pingInterval, expiry: options.sessionExpiry, clock: clock)
    }

    var isStopped: Bool { state.withLock { $0.isStopped } }

    // MARK: Sessions

    /// Creates and registers a session with a fresh token; nil once stopped.
    func makeSession() -> ServerSession? {
        let token = SessionToken.make()
        let number: Int? = state.withLock { state in
            guard !state.isStopped else { return nil }
            defer { state.nextSessionNumber += 1 }
            return state.nextSessionNumber
        }
        guard let number else { return nil }
        let session = ServerSession(number: number, token: token, core: self)
        state.withLock { $0.sessions[token] = session }
        return session
    }

    /// The live session with `token`, if any.
    func session(token: String) -> ServerSession? {
        state.withLock { $0.sessions[token] }
    }

    /// Forgets a session (expiry).
    func removeSession(token: String) {
        _ = state.withLock { $0.sessions.removeValue(forKey: token) }
    }

    /// Ends the session with `token` (its resend buffer overflowed).
    func expireSession(token: String, reason: WireErrorBody) {
        guard let session = session(token: token) else { return }
        Task { await session.expire(reason: reason) }
    }

    // MARK: Scopes

    /// The scope named `name`, created on first use; nil once the server stopped (a scope made then
    /// would open its log beside the one the stop just closed). The server's mode decides here, once,
    /// which kind of scope it is: a ``ClusterScope`` with a cluster, a ``LocalScope`` otherwise.
    func scope(named name: String) -> (any HostedScope)? {
        state.withLock { state in
            if state.isStopped { return nil }
            if let scope = state.scopes[name] { return scope }
            let scope: any HostedScope = if let cluster {
                ClusterScope(name: name, link: cluster, limits: limits, clock: clock, log: log, idleTimeout: options.scopeIdleTimeout)
            } else {
                LocalScope(name: name, limits: limits, dataDirectory: options.dataDirectory, writer: logWriter,
                           slots: scopeSlots, idleTimeout: options.scopeIdleTimeout, clock: clock, log: log,
                           procedures: options.procedures, root: options.roots[name])
            }
            state.scopes[name] = scope
            return scope
        }
    }

    /// The live session count and the scopes in memory, sorted by name. For the inspector page.
    func inspection() -> (sessions: Int, scopes: [any HostedScope]) {
        state.withLock { state in (state.sessions.count, state.scopes.sorted { $0.key < $1.key }.map(\.value)) }
    }

    /// The scope named `name` if it exists in memory.
    func existingScope(named name: String) -> (any HostedScope)? {
        state.withLock { $0.scopes[name] }
    }

    // MARK: Connections

    /// Registers a live connection; false once stopped.
    func register(_ connection: ServerConnection) -> Bool {
        state.withLock { state in
            guard !state.isStopped else { return false }
            state.connections[ObjectIdentifier(connection)] = connection
            return true
        }
    }

    func unregister(_ connection: ServerConnection) {
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Marks the server stopped and hands back everything to shut down.
    func stopAll() -> (sessions: [ServerSession], scopes: [any HostedScope], connections: [ServerConnection]) {
        ticker.stop()
        return state.withLock { state in
            state.isStopped = true
            defer {
                state.sessions = [:]
                state.connections = [:]
                state.scopes = [:]
            }
            return (Array(state.sessions.values), Array(state.scopes.values), Array(state.connections.values))
        }
    }
}
