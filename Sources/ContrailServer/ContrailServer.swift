import ContrailWire
import ContrailWebSocket
import Foundation

/// A schema-agnostic Jetstream sync server (the Protocol article of the Contrail catalog, with every §8 extension): hosts any
/// number of scopes, each an actor holding objects by UUID; sessions survive reconnects; change
/// sets are applied in one order per scope and broadcast to the other subscribed sessions;
/// scopes persist to `dataDirectory`.
///
/// ```swift
/// let server = try ContrailServer(options: ServerOptions())
/// let client = Client(connector: server.connector())    // in-process, no sockets
/// let port = try await server.start()                    // or over WebSocket
/// ```
public final class ContrailServer: Sendable {
    let core: ServerCore
    private let listener = SanitizerVisibleMutex<WebSocketListener?>(nil)
    /// The one shutdown (``stop()`` or ``drain(timeout:)``), once begun.
    private let shutdown = SanitizerVisibleMutex<Task<Void, Never>?>(nil)
    /// The event loops the connections run on when ``ServerOptions/eventLoopGroup`` names none: the
    /// server's own (as many as `EventLoopGroup.shared` has), made by ``start()`` and stopped with the server, so that its
    /// connections' work (each connection handles its frames on its loop) never delays the other
    /// servers and clients of the process, which use `EventLoopGroup.shared`, nor theirs its own.
    private let ownLoops = SanitizerVisibleMutex<EventLoopGroup?>(nil)

    /// Creates a server; creates `options.dataDirectory` if needed. Nothing listens until ``start()``.
    public init(options: ServerOptions = .init()) throws(ServerError) {
        if let directory = options.dataDirectory {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw .dataDirectory(path: directory.path(percentEncoded: false), reason: error.localizedDescription)
            }
        }
        for name in options.scopes {
            if let problem = ScopeName.problem(with: name) { throw .invalidScopeName(name: name, reason: problem.message) }
        }
        core = ServerCore(options: options)
        core.discoverStoredScopes()
        for name in options.scopes { _ = core.declareScope(named: name) }
    }

    /// The options the server runs with.
    public var options: ServerOptions { core.options }

    /// Starts the WebSocket listener on `options.host`/`options.port` and returns the bound port.
    /// Calling it again returns the same port.
    /// - Throws: ``ServerError/listener(_:)`` when the address cannot be bound, ``ServerError/stopped``.
    public func start() async throws(ServerError) -> UInt16 {
        guard !core.isStopped else { throw .stopped }
        let options = core.options
        let routes = OperationsRoutes(core: core)
        let pages = options.servesPages ? PageServer(core: core) : nil
        let responder: HTTPResponder = { request in
            if let answer = await routes.respond(to: request) { return answer }
            // Without pages, any other request is what it was before there were routes: not an upgrade.
            return await pages?.respond(to: request) ?? .error(status: 400, reason: "Bad Request")
        }
        // Only the admin API reads a body, and only after the credential checks out (see `gateBody`).
        let bodyGate: HTTPBodyGate = { request in
            if let answer = await routes.respond(to: request) { return answer }
            guard let pages else { return .error(status: 400, reason: "Bad Request") }
            return await pages.gateBody(of: request)
        }
        let log = core.log
        let loops: EventLoopGroup
        if let given = options.eventLoopGroup {
            loops = given
        } else {
            do throws(NetworkError) {
                loops = try ownLoops.withLock { own throws(NetworkError) -> EventLoopGroup in
                    if let own { return own }
                    let created = try EventLoopGroup(count: EventLoopGroup.defaultCount, name: "contrail-srv")
                    own = created
                    return created
                }
            } catch {
                throw .listener(error.description)
            }
        }
        let listener = listener.withLock { current in
            if let current { return current }
            let created = WebSocketListener(host: options.host, port: options.port, maxMessageBytes: options.maxMessageBytes,
                                            handshakeTimeout: options.handshakeTimeout, httpResponder: responder, httpBodyGate: bodyGate, tls: options.tls,
                                            eventLoopGroup: loops, log: { line in log.write("listener", level: .warning, line) })
            current = created
            return created
        }
        let port = try await listener.start { [self] transport, headers, peer in accept(transport, headers: headers, peer: peer) }
        let scheme = options.tls == nil ? "ws" : "wss"
        if core.advance(.started) { core.log.write("server.listening", "listening on \(scheme)://\(options.host):\(port)/") }
        return port
    }

    /// Serves one connected transport (in-memory or WebSocket) with its connect-time headers
    /// (e.g. `X-Jetstream-SessionToken` to resume) and the peer's address (nil: an in-process peer).
    /// The client's address, which failed credentials count against and the log names, is the
    /// peer's, or the one its `X-Forwarded-For` names when the peer is one of
    /// ``ServerOptions/trustedProxies``. Returns at once; the connection runs on its own.
    public func accept(_ transport: any SyncTransport, headers: [(String, String)], peer: String? = nil) {
        let client = ClientAddress.resolve(peer: peer, headers: headers, trusted: core.options.trustedProxies)
        ServerConnection(transport: transport, headers: headers, peer: client, core: core).start()
    }

    /// Ends every live session of `user` (``SessionIdentity/user``) at once: each connection is
    /// closed with 4097 and the reason `session-revoked`, and the sessions cannot resume. New
    /// sessions are up to ``ServerOptions/sessionHook`` (or the token's expiry): stop issuing the
    /// user's credentials first. Returns how many sessions ended. O(sessions).
    @discardableResult
    public func revoke(user: String) async -> Int {
        await ServerAdmin(core: core).revoke(user: user)
    }

    /// A connector making in-memory connections to this server: for tests, the Playground and
    /// apps that embed client and server in one process.
    public func connector() -> any SyncConnector {
        InMemoryServerConnector(server: self)
    }

    /// Closes every connection (code 1001), stops all sessions and writes out and closes every
    /// scope's log. The server accepts nothing afterwards.
    public func stop() async {
        await shutDown(closing: 1001, reason: "server is stopping", as: .stopped)
        core.log.write("server.stopped", "stopped")
    }

    /// Drains the server (what `contrail serve` does on SIGTERM): `/readyz` turns 503 and new
    /// connections are refused; every session's connection is closed with
    /// ``JetstreamCloseCode/draining`` (4099, Protocol §8.22), which tells a Contrail client to
    /// reconnect to another server (or this one, restarted) with a new session, resending what is
    /// pending; then every scope's log is written out and synced, and the listener closes, as in
    /// ``stop()``. Returns when done or after `timeout`, whichever comes first (then the rest goes
    /// on in the background: a process may exit, since every acknowledged change set is already
    /// durable). Returns whether it finished in time. A second call waits like the first.
    /// - Parameter timeout: the bound; nil: ``ServerOptions/drainTimeout``.
    @discardableResult
    public func drain(timeout: Duration? = nil) async -> Bool {
        let timeout = timeout ?? core.options.drainTimeout
        let work = Task { [self] in
            if core.advance(.drain) {
                core.log.write("server.draining", "draining: refusing new sessions, telling \(core.gauges().connections) connection(s) to reconnect elsewhere")
            }
            await shutDown(closing: JetstreamCloseCode.draining, reason: WireErrorBody.serverDraining.closeReason(), as: .drained)
        }
        let clock = core.clock
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await work.value; return true }
            group.addTask { (try? await clock.sleep(for: timeout)) == nil ? true : false }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        core.log.write("server.drained", level: finished ? .info : .warning,
                       finished ? "drained: logs written out and synced" : "drain did not finish within \(timeout)")
        return finished
    }

    /// What ``stop()`` and ``drain(timeout:)`` share: closes every connection with `code`, ends the
    /// sessions (counted as `closedAs`), writes out and closes the scopes, then the log writer and
    /// the cluster link. Once per server: a later call returns when the first is done.
    private func shutDown(closing code: UInt16, reason: String, as closedAs: ServerMetrics.CloseReason) async {
        let task = shutdown.withLock { current -> Task<Void, Never> in
            if let current { return current }
            let created = Task { [self] in await performShutDown(closing: code, reason: reason, as: closedAs) }
            current = created
            return created
        }
        await task.value
    }

    private func performShutDown(closing code: UInt16, reason: String, as closedAs: ServerMetrics.CloseReason) async {
        if code == JetstreamCloseCode.draining {
            // Connections first, while the scopes still run: each client hears at once where to go.
            await withTaskGroup(of: Void.self) { group in
                for connection in core.liveConnections() { group.addTask { await connection.close(code: code, reason: reason) } }
            }
        }
        let (sessions, scopes, connections) = core.stopAll()
        core.metrics.sessionClosed(closedAs, count: sessions.count)
        if let listener = listener.withLock({ $0 }) { await listener.stop() }
        for session in sessions { await session.shutDown() }
        for connection in connections { await connection.close(code: code, reason: reason) }
        for scope in scopes { await scope.close() }
        await core.presence.stop()
        core.logWriter?.finish()
        await core.cluster?.close()
        if let loops = ownLoops.withLock({ $0 }) { await loops.stop() }
    }

    /// What `/metrics` serves (``ServerOptions/servesMetrics``): the Prometheus text format, for an
    /// app that serves it on an endpoint of its own. O(sessions).
    public func metricsText() async -> String {
        await MetricsEndpoint(core: core).text()
    }

    /// Writes an operator's line through the server's log (``ServerOptions/log`` in
    /// ``ServerOptions/logFormat``) as event `event` (a dotted name such as `tls.reload`).
    public func log(_ event: String, _ message: String) {
        core.log.write(event, message)
    }

    /// The state of scope `name` in the shape of `Scope.stateJSON()`
    /// (`{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}`); nil if the scope does not
    /// exist (``ServerOptions/scopeCreation``: a scope only fetched, never written, does not).
    public func state(ofScope name: String) async -> JSON? {
        guard ScopeName.problem(with: name) == nil, let scope = core.existingScope(named: name) else { return nil }
        return await scope.stateJSON()
    }

    /// Whether the scope `name` exists: declared, in the data directory, or created as
    /// ``ServerOptions/scopeCreation`` says.
    public func scopeExists(_ name: String) -> Bool {
        core.scopeExists(named: name)
    }
}
