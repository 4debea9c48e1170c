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
    /// The counters and histograms of `/metrics`.
    let metrics: ServerMetrics
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
        var phase = ServerPhase()
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
        self.log = ServerLog(sink: options.log, format: options.logFormat)
        self.metrics = ServerMetrics()
        self.logWriter = options.dataDirectory == nil ? nil : ScopeLogWriter(
            policy: options.fsync, log: log, metrics: metrics,
            history: options.historyRetention.map { retention in
                ScopeLogWriter.HistoryKeeping(retentionSeconds: Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18,
                                              now: options.wallClock)
            })
        self.scopeSlots = ScopeSlots(limit: options.maxOpenScopes)
        self.throttle = AuthThrottle(initialDelay: options.failedAttemptDelay, maxDelay: options.maxFailedAttemptDelay,
                                     maxWaitingPerSource: options.maxDelayedAttemptsPerSource, clock: clock)
        self.cluster = options.cluster.map { ClusterLink(options: $0, log: ServerLog(sink: options.log, format: options.logFormat)) }
        self.ticker = SessionTicker(pingInterval: options.pingInterval, expiry: options.sessionExpiry,
                                    maxWaitingBytes: options.maxWaitingSessionBytes, clock: clock, log: log)
        self.presence = PresenceHub(clock: clock, limits: limits, timeout: options.presenceTimeout, log: log, cluster: cluster)
    }

    var isStopped: Bool { phase == .stopped }

    /// Where the server stands (``ServerPhase``).
    var phase: ServerPhase.State { state.withLock { $0.phase.state } }

    /// Moves the phase on; whether the event changed it (``ServerPhase/Action/proceed``).
    func advance(_ event: ServerPhase.Event) -> Bool {
        state.withLock { $0.phase.handle(event, fallback: .ignore) } == .proceed
    }

    /// Whether new connections and sessions are refused: draining or stopped.
    private static func refusing(_ state: State) -> Bool {
        state.phase.state == .draining || state.phase.state == .stopped
    }

    // MARK: Sessions

    /// Creates and registers a session acting as `identity`, with a fresh token; nil once stopped.
    /// A credential with an expiry ends the session when it passes (the ``ticker`` checks it, on
    /// ``clock``: no timer of its own per session).
    /// `receivesOrigins`: its broadcasts say who made each change set (an admin's inspector).
    /// `receivesCollectionEdits`: its broadcasts carry collections as edits (Protocol §8.24).
    func makeSession(identity: SessionIdentity, receivesOrigins: Bool = false, receivesCollectionEdits: Bool = false) -> ServerSession? {
        let token = SessionToken.make()
        let number: Int? = state.withLock { state in
            guard !Self.refusing(state) else { return nil }
            defer { state.nextSessionNumber += 1 }
            return state.nextSessionNumber
        }
        guard let number else { return nil }
        let session = ServerSession(number: number, token: token, identity: identity, receivesOrigins: receivesOrigins,
                                    receivesCollectionEdits: receivesCollectionEdits, core: self)
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

    /// Every live session, by number. For the admin surface. O(sessions).
    func liveSessions() -> [ServerSession] {
        state.withLock { $0.sessions.values.sorted { $0.number < $1.number } }
    }

    /// The scopes that exist, for the admin surface: by name those a name is known for (every one
    /// in memory or without a data directory), by file name the files of the data directory no
    /// scope in memory stands for. Sorted. O(scopes).
    func existingScopeNames() -> (names: [String], files: [String]) {
        state.withLock { state in
            if options.dataDirectory == nil || cluster != nil { return (state.existing.sorted(), []) }
            let inMemory = state.scopes.keys.filter { state.existing.contains(scopeKey($0)) }
            return (inMemory.sorted(), state.existing.subtracting(inMemory.map(scopeKey)).sorted())
        }
    }

    /// In cluster mode, the scope actor for `name` whether or not this server has held it (its
    /// history is the cluster's, which any server reads); nil when stopped or not in a cluster.
    /// Making the actor loads and writes nothing.
    func clusterScope(named name: String) -> (any HostedScope)? {
        guard cluster != nil else { return nil }
        return state.withLock { state in
            guard state.phase.state != .stopped else { return nil }
            if let scope = state.scopes[name] { return scope }
            let scope = makeScope(name, exists: true)
            state.scopes[name] = scope
            return scope
        }
    }

    /// The scope actor for `name` if the server has one now (loaded or not), without making one.
    func scopeInMemory(named name: String) -> (any HostedScope)? {
        state.withLock { $0.scopes[name] }
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
                                idleTimeout: options.scopeIdleTimeout, metrics: metrics,
                                historyRetention: options.historyRetention, wallClock: options.wallClock)
        }
        return LocalScope(name: name, limits: limits, dataDirectory: options.dataDirectory, writer: logWriter,
                          slots: scopeSlots, idleTimeout: options.scopeIdleTimeout, clock: clock, log: log,
                          procedures: options.procedures, root: options.roots[name], exists: exists, metrics: metrics,
                          wallClock: options.wallClock,
                          create: { [weak self] in
                              guard let self else { return .limitExceeded("server is stopping") }
                              return self.createScope(named: name)
                          })
    }

    /// A declared scope (``ServerOptions/scopes``): created (or restored) whatever the mode and the
    /// limit. Nil once stopped.
    func declareScope(named name: String) -> (any HostedScope)? {
        state.withLock { state in
            if state.phase.state == .stopped { return nil }
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
            if state.phase.state == .stopped { return .stopped }
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
            guard state.phase.state != .stopped, state.existing.contains(scopeKey(name)) else { return nil }
            if let scope = state.scopes[name] { return scope }
            let scope = makeScope(name, exists: true)
            state.scopes[name] = scope
            return scope
        }
    }

    // MARK: Connections

    /// Registers a live connection; the phase that refuses it (draining or stopped) otherwise.
    func register(_ connection: ServerConnection) -> ServerPhase.State? {
        state.withLock { state in
            guard !Self.refusing(state) else { return state.phase.state }
            state.connections[ObjectIdentifier(connection)] = connection
            return nil
        }
    }

    func unregister(_ connection: ServerConnection) {
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
        ticker.connectionClosed()
    }

    /// The live sessions and connections, for a drain (which closes the connections and leaves the
    /// rest to ``stopAll()``).
    func liveConnections() -> [ServerConnection] {
        state.withLock { Array($0.connections.values) }
    }

    /// What a scrape counts: sessions (live, resumable), connections, scopes in memory, and the
    /// sessions' outboxes (for the resend-buffer bytes). O(sessions).
    func gauges() -> (sessions: Int, connections: Int, scopes: Int, outboxes: [SessionOutbox]) {
        state.withLock { state in
            (state.sessions.count, state.connections.count, state.scopes.count, state.sessions.values.map(\.outbox))
        }
    }

    /// Marks the server stopped and hands back everything to shut down.
    func stopAll() -> (sessions: [ServerSession], scopes: [any HostedScope], connections: [ServerConnection]) {
        ticker.stop()
        return state.withLock { state in
            _ = state.phase.handle(.stop, fallback: .ignore)
            defer {
                state.sessions = [:]
                state.connections = [:]
                state.scopes = [:]
            }
            return (Array(state.sessions.values), Array(state.scopes.values), Array(state.connections.values))
        }
    }
}
