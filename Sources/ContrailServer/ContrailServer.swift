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
    private let core: ServerCore
    private let listener = SanitizerVisibleMutex<WebSocketListener?>(nil)

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
        var pages: HTTPResponder?
        if options.servesPages {
            let server = PageServer(core: core)
            pages = { request in await server.respond(to: request) }
        }
        let listener = listener.withLock { current in
            if let current { return current }
            let created = WebSocketListener(host: options.host, port: options.port, maxMessageBytes: options.maxMessageBytes,
                                            httpResponder: pages, tls: options.tls)
            current = created
            return created
        }
        let port = try await listener.start { [self] transport, headers, peer in accept(transport, headers: headers, peer: peer) }
        core.log.write("listening on \(options.host):\(port)")
        return port
    }

    /// Serves one connected transport (in-memory or WebSocket) with its connect-time headers
    /// (e.g. `X-Jetstream-SessionToken` to resume) and the peer's address (nil: an in-process peer).
    /// The client's address, which failed credentials count against and the log names, is the
    /// peer's, or the one its `X-Forwarded-For` names when the peer is one of
    /// ``ServerOptions/trustedProxies``. Returns at once; the connection runs on its own.
    public func accept(_ transport: any SyncTransport, headers: [(String, String)], peer: String? = nil) {
        let client = ClientAddress.resolve(peer: peer, headers: headers, trusted: core.options.trustedProxies)
        let connection = ServerConnection(transport: transport, headers: headers, peer: client, core: core)
        Task { await connection.run() }
    }

    /// Ends every live session of `user` (``SessionIdentity/user``) at once: each connection is
    /// closed with 4097 and the reason `session-revoked`, and the sessions cannot resume. New
    /// sessions are up to ``ServerOptions/sessionHook`` (or the token's expiry): stop issuing the
    /// user's credentials first. Returns how many sessions ended. O(sessions).
    @discardableResult
    public func revoke(user: String) async -> Int {
        let count = await core.revoke(user: user)
        core.log.write("revoked user '\(user)': \(count) session(s) ended")
        return count
    }

    /// A connector making in-memory connections to this server: for tests, the Playground and
    /// apps that embed client and server in one process.
    public func connector() -> any SyncConnector {
        InMemoryServerConnector(server: self)
    }

    /// Closes every connection (code 1001), stops all sessions and writes out and closes every
    /// scope's log. The server accepts nothing afterwards.
    public func stop() async {
        let (sessions, scopes, connections) = core.stopAll()
        if let listener = listener.withLock({ $0 }) { await listener.stop() }
        for session in sessions { await session.shutDown() }
        for connection in connections { await connection.close(code: 1001, reason: "server is stopping") }
        for scope in scopes { await scope.close() }
        await core.presence.stop()
        core.logWriter?.finish()
        await core.cluster?.close()
        core.log.write("stopped")
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
