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
    /// Failed credentials per client address.
    let throttle: AuthThrottle
    /// The connection to the cluster's log (`ServerOptions.cluster`), if any.
    let cluster: ClusterLink?
    /// Keep-alive pings and session expiry.
    let ticker: SessionTicker
    /// ``ServerOptions/clock``, which every server timer and timeout reads.
    let clock: ElapsedClock
    /// Every scope's presence (§8.20).
    let presence: PresenceHub

    private struct State {
        var sessions: [String: ServerSession] = [:]
        var scopes: [String: any HostedScope] = [:]
        /// The scopes that exist (``ScopeCreation``), by ``scopeKey(_:)``: with a data directory the
        /// scope files in it, otherwise names. Counted against ``ServerOptions/maxScopes``.
        var existing: Set<String> = []
        /// How many sessions hold each scope in `scopes` (a scope that does not exist leaves
        /// `scopes` with its last holder).
        var holders: [String: Int] = [:]
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        var nextSessionNumber = 1
        var isStopped = false
    }

    /// What a session's fetch of a scope name comes to.
    enum ScopeAccess {
        /// The scope (existing, or not yet: then it answers an empty state until written).
        case scope(any HostedScope)
        /// A fetch error to answer.
        case refused(WireErrorBody)
        /// The server is stopping.
        case stopped
    }

    private let state = SanitizerVisibleMutex(State())

    init(options: ServerOptions) {
        self.options = options
        self.limits = options.limits
        self.clock = ElapsedClock(options.clock)
        self.log = ServerLog(sink: options.log)
        self.logWriter = options.dataDirectory == nil ? nil : ScopeLogWriter(policy: options.fsync, log: log)
        self.scopeSlots = ScopeSlots(limit: options.maxOpenScopes)
        self.throttle = AuthThrottle(initialDelay: options.failedAttemptDelay, maxDelay: options.maxFailedAttemptDelay,
                                     maxWaitingPerSource: options.maxDelayedAttemptsPerSource, clock: clock)
        self.cluster = options.cluster.map { ClusterLink(options: $0, log: ServerLog(sink: options.log)) }
        self.ticker = SessionTicker(pingInterval: options.pingInterval, expiry: options.sessionExpiry, clock: clock)
        self.presence = PresenceHub(clock: clock, limits: limits, timeout: options.presenceTimeout, log: log, cluster: cluster)
    }

    var isStopped: Bool { state.withLock { $0.isStopped } }

    // MARK: Sessions

    /// Creates and registers a session acting as `identity`, with a fresh token; nil once stopped.
    /// A credential with an expiry ends the session when it passes (the ``ticker`` checks it, on
    /// ``clock``: no timer of its own per session).
    func makeSession(identity: SessionIdentity) -> ServerSession? {
        let token = SessionToken.make()
        let number: Int? = state.withLock { state in
            guard !state.isStopped else { return nil }
            defer { state.nextSessionNumber += 1 }
            return state.nextSessionNumber
        }
        guard let number else { return nil }
        let session = ServerSession(number: number, token: token, identity: identity, core: self)
        state.withLock { $0.sessions[token] = session }
        return session
    }

    /// Ends every session of `user` at once (close 4097, `session-revoked`); their tokens are
    /// forgotten, so they cannot resume. Returns how many there were. O(sessions).
    func revoke(user: String) async -> Int {
        let sessions = state.withLock { $0.sessions.values.filter { $0.identity.user == user } }
        for session in sessions { await session.expire(reason: .sessionRevoked) }
        return sessions.count
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

    /// The key a scope's existence is recorded under: its file name with a data directory (so the
    /// files found there at start count), its name otherwise.
    private func scopeKey(_ name: String) -> String {
        options.dataDirectory == nil || cluster != nil ? name : ScopeFileName.fileName(for: name)
    }

    /// Records the scope files of the data directory as existing scopes (at start). O(files).
    func discoverStoredScopes() {
        guard cluster == nil, let directory = options.dataDirectory else { return }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(percentEncoded: false))) ?? []
        state.withLock { state in
            for file in files where file.hasSuffix(".scope") { state.existing.insert(file) }
        }
    }

    /// Makes the scope actor for `name` (under the state lock). The server's mode decides here,
    /// once, which kind of scope it is: a ``ClusterScope`` with a cluster, a ``LocalScope`` otherwise.
    private func makeScope(_ name: String, exists: Bool) -> any HostedScope {
        if let cluster {
            return ClusterScope(name: name, link: cluster, limits: limits, clock: clock, log: log,
                                idleTimeout: options.scopeIdleTimeout)
        }
        return LocalScope(name: name, limits: limits, dataDirectory: options.dataDirectory, writer: logWriter,
                          slots: scopeSlots, idleTimeout: options.scopeIdleTimeout, clock: clock, log: log,
                          procedures: options.procedures, root: options.roots[name], exists: exists,
                          create: { [weak self] in
                              guard let self else { return .limitExceeded("server is stopping") }
                              return self.createScope(named: name)
                          })
    }

    /// A declared scope (``ServerOptions/scopes``): created (or restored) whatever the mode and the
    /// limit. Nil once stopped.
    func declareScope(named name: String) -> (any HostedScope)? {
        state.withLock { state in
            if state.isStopped { return nil }
            state.existing.insert(scopeKey(name))
            if let scope = state.scopes[name] { return scope }
            let scope = makeScope(name, exists: true)
            state.scopes[name] = scope
            return scope
        }
    }

    /// The scope named `name` for a session's fetch, counted as held until ``releaseScope(named:)``.
    /// A name that does not exist is created (``ScopeCreation/fetch``, within
    /// ``ServerOptions/maxScopes``), refused (``ScopeCreation/declared``), or served as an empty
    /// scope that exists only once written (``ScopeCreation/write``). In cluster mode a scope
    /// exists once this server holds it (the cluster's log keeps nothing until a write).
    func holdScope(named name: String) -> ScopeAccess {
        state.withLock { state in
            if state.isStopped { return .stopped }
            let key = scopeKey(name)
            var exists = state.existing.contains(key)
            if !exists {
                switch options.scopeCreation {
                case .declared:
                    return .refused(.scopeNotFound)
                case .fetch:
                    if let refusal = Self.overLimit(state, options.maxScopes) { return .refused(refusal) }
                    state.existing.insert(key)
                    exists = true
                case .write:
                    if cluster != nil {
                        if let refusal = Self.overLimit(state, options.maxScopes) { return .refused(refusal) }
                        state.existing.insert(key)
                        exists = true
                    }
                }
            }
            let scope: any HostedScope
            if let held = state.scopes[name] {
                scope = held
            } else {
                scope = makeScope(name, exists: exists)
                state.scopes[name] = scope
            }
            state.holders[name, default: 0] += 1
            return .scope(scope)
        }
    }

    /// A session no longer holds the scope `name`; a scope that does not exist leaves memory with
    /// its last holder.
    func releaseScope(named name: String) {
        state.withLock { state in
            guard let count = state.holders[name] else { return }
            if count > 1 {
                state.holders[name] = count - 1
                return
            }
            state.holders[name] = nil
            if !state.existing.contains(scopeKey(name)) { state.scopes[name] = nil }
        }
    }

    /// Records that the scope `name` now exists (its first accepted write, ``ScopeCreation/write``);
    /// a `limit-exceeded` error past ``ServerOptions/maxScopes``.
    func createScope(named name: String) -> WireErrorBody? {
        state.withLock { state in
            let key = scopeKey(name)
            if state.existing.contains(key) { return nil }
            if let refusal = Self.overLimit(state, options.maxScopes) { return refusal }
            state.existing.insert(key)
            return nil
        }
    }

    private static func overLimit(_ state: State, _ limit: Int?) -> WireErrorBody? {
        guard let limit, state.existing.count >= limit else { return nil }
        return .limitExceeded("Server holds the maximum of \(limit) scopes")
    }

    /// Whether the scope `name` exists.
    func scopeExists(named name: String) -> Bool {
        state.withLock { $0.existing.contains(scopeKey(name)) }
    }

    /// The live session count and the existing scopes in memory, sorted by name. For the inspector page.
    func inspection() -> (sessions: Int, scopes: [any HostedScope]) {
        state.withLock { state in
            (state.sessions.count, state.scopes.filter { state.existing.contains(scopeKey($0.key)) }
                .sorted { $0.key < $1.key }.map(\.value))
        }
    }

    /// The scope named `name` if it exists (in memory, or in the data directory: then it is loaded
    /// into memory). Nil for a scope that does not exist, or once stopped.
    func existingScope(named name: String) -> (any HostedScope)? {
        state.withLock { state in
            guard !state.isStopped, state.existing.contains(scopeKey(name)) else { return nil }
            if let scope = state.scopes[name] { return scope }
            let scope = makeScope(name, exists: true)
            state.scopes[name] = scope
            return scope
        }
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
