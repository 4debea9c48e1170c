import Synchronization

/// A WebSocket server: listens on a host and port, runs the opening handshake (asking an optional hook
/// that sees the path and headers), and hands each accepted connection over through `connections`.
///
/// ```swift
/// let server = WebSocketServer(port: 0) { request in
///     request.value(for: "Authorization") == "Bearer secret" ? .accept : .reject(status: 401, reason: "Unauthorized")
/// }
/// let port = try await server.start()
/// for await connection in server.connections {
///     Task { for try await message in connection.messages { try await connection.send(message) } }
/// }
/// ```
///
/// Connections are spread over `options.eventLoopGroup` (one loop per core by default), or all run on
/// `options.eventLoop` if it names one.
/// A client that does not complete its handshake within `options.handshakeTimeout` is dropped.
public final class WebSocketServer: Sendable {
    /// The host (name or address) to listen on.
    public let host: String
    private let requestedPort: UInt16
    private let options: WebSocketOptions
    private let handshake: @Sendable (HTTPHead) -> HandshakeDecision
    /// Connections whose handshake succeeded, in order. Finishes when the server stops.
    public let connections: AsyncStream<WebSocketConnection>
    private let continuation: AsyncStream<WebSocketConnection>.Continuation

    private struct State {
        /// The listener's loop.
        var loop: EventLoop?
        var listener: Listener?
        var port: UInt16?
        var live: [ObjectIdentifier: WebSocketConnection] = [:]
        var stopped = false
        var starting = false
    }
    private let state = SanitizerVisibleMutex(State())

    /// A server that is not listening yet; call `start()`.
    /// - Parameters:
    ///   - host: the address to listen on (`"127.0.0.1"`, `"::"`, `"0.0.0.0"`, or a name).
    ///   - port: the port; 0 picks a free one (`start()` returns it).
    ///   - handshake: decides per connection from its request (path, headers); called on the loop thread,
    ///     so keep it quick.
    public init(host: String = "127.0.0.1", port: UInt16 = 0, options: WebSocketOptions = .init(),
                handshake: @escaping @Sendable (HTTPHead) -> HandshakeDecision = { _ in .accept })
    {
        self.host = host
        self.requestedPort = port
        self.options = options
        self.handshake = handshake
        (connections, continuation) = AsyncStream.makeStream(of: WebSocketConnection.self)
    }

    /// Starts listening and returns the bound port. Calling it again returns the same port. Nothing blocks:
    /// the host is resolved on a Dispatch queue and the socket registered on its loop.
    /// - Throws: `unknownHost` for a host that does not resolve, `io` when binding fails (e.g. port in use)
    ///   or when another `start()` is still under way, `closed` once stopped.
    @discardableResult
    public func start() async throws(WebSocketError) -> UInt16 {
        let phase = state.withLock { s -> StartPhase in
            if let port = s.port { return .started(port) }
            if s.stopped { return .stopped }
            if s.starting { return .busy }
            s.starting = true
            return .idle
        }
        switch phase {
        case .started(let port): return port
        case .stopped: throw .closed(nil, "the server has stopped")
        case .busy: throw .io(errno: EALREADY, "WebSocketServer.start() while another start() is under way")
        case .idle: break
        }
        let loop = options.nextLoop
        let listener: Listener
        do throws(NetworkError) {
            listener = try await Listener.start(host: host, port: requestedPort, loop: loop, log: options.log) {
                [weak self] fd in
                if let self { self.dispatch(fd) } else { Socket.close(fd) }
            }
        } catch {
            state.withLock { $0.starting = false }
            throw WebSocketError(error)
        }
        let installed = state.withLock { s -> Bool in
            s.starting = false
            guard !s.stopped else { return false }
            s.loop = loop
            s.listener = listener
            s.port = listener.port
            return true
        }
        guard installed else {
            // `stop()` ran while this start was under way. Refused once the loop has stopped, which
            // closed the listener itself.
            try? await loop.submit { listener.close() }
            throw .closed(nil, "the server was stopped while starting")
        }
        return listener.port
    }

    /// What `start()` finds.
    private enum StartPhase { case idle, busy, started(UInt16), stopped }

    /// The bound port once started.
    public var port: UInt16? { state.withLock { $0.port } }

    /// Connections that are open or still handshaking.
    public var connectionCount: Int { state.withLock { $0.live.count } }

    /// Hands a freshly accepted descriptor to the loop that will serve it. On the listener's loop thread.
    private func dispatch(_ fd: Int32) {
        let target = options.nextLoop
        if target.isOnLoop {
            accepted(fd, loop: target)
        } else {
            do {
                try target.enqueue { [weak self] in
                    if let self { self.accepted(fd, loop: target) } else { Socket.close(fd) }
                }
            } catch {
                // That loop has stopped: nobody will serve the connection.
                Socket.close(fd)
            }
        }
    }

    /// Starts the handshake of an accepted connection. On `loop`'s thread.
    private func accepted(_ fd: Int32, loop: EventLoop) {
        if state.withLock({ $0.stopped }) {
            Socket.close(fd)
            return
        }
        var tls: TLSSession?
        if let serverTLS = options.serverTLS {
            do throws(TLSError) {
                tls = try serverTLS.makeSession()
            } catch {
                options.log("contrail: refusing a connection: \(error)")
                Socket.close(fd)
                return
            }
        }
        let continuation = self.continuation
        let connection = WebSocketConnection.accept(fd: fd, loop: loop, options: options, tls: tls, hook: handshake) {
            continuation.yield($0)
        }
        let key = ObjectIdentifier(connection)
        if connection.isClosed { return }
        let kept = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.live[key] = connection
            return true
        }
        guard kept else {
            // `stop()` took its list of connections before this one was added.
            connection.channel.close()
            return
        }
        connection.onFinished = { [weak self] in
            _ = self?.state.withLock { $0.live.removeValue(forKey: key) }
        }
    }

    /// Stops listening, closes every connection (going away, 1001) and waits for them, and finishes
    /// `connections`. The event loops keep running (they are shared).
    public func stop() async {
        let (loop, listener, live) = state.withLock { s in
            s.stopped = true
            let taken = (s.loop, s.listener, Array(s.live.values))
            s.listener = nil
            s.live = [:]
            s.loop = nil
            return taken
        }
        if let loop, let listener {
            // Refused once the loop has stopped, which closed the listener itself.
            try? await loop.submit { listener.close() }
        }
        await withTaskGroup(of: Void.self) { group in
            for connection in live {
                group.addTask { await connection.close(code: .goingAway, reason: "server shutting down") }
            }
        }
        continuation.finish()
    }
}
