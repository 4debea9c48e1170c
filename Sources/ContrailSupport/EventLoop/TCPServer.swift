import Synchronization

/// A plain TCP server on an event loop, handing over each accepted connection as a `TCPConnection`.
/// The baseline for `contrail bench websocket` and a helper for tests; see `WebSocketServer` for WebSockets.
public final class TCPServer: Sendable {
    /// Accepted connections, in order. Finishes when the server stops.
    public let connections: AsyncStream<TCPConnection>
    private let continuation: AsyncStream<TCPConnection>.Continuation
    private let host: String
    private let requestedPort: UInt16
    private let eventLoop: EventLoop?
    private struct State {
        var loop: EventLoop?
        var listener: Listener?
        var port: UInt16?
    }
    private let state = SanitizerVisibleMutex(State())

    private let readHighWater: Int

    /// A server that is not listening yet; `eventLoop` nil gives it a loop of its own. Each connection
    /// stops reading while more than `readHighWater` received bytes wait for `receive()`.
    public init(host: String = "127.0.0.1", port: UInt16 = 0, eventLoop: EventLoop? = nil, readHighWater: Int = 4 << 20) {
        self.readHighWater = readHighWater
        self.host = host
        self.requestedPort = port
        self.eventLoop = eventLoop
        (connections, continuation) = AsyncStream.makeStream(of: TCPConnection.self)
    }

    /// Starts listening and returns the bound port (calling it again returns the same port). Nothing blocks;
    /// on failure the server's own loop thread is stopped.
    @discardableResult
    public func start() async throws(NetworkError) -> UInt16 {
        if let port = state.withLock({ $0.port }) { return port }
        let loop: EventLoop
        if let eventLoop { loop = eventLoop } else { loop = try EventLoop(name: "contrail.tcp.server") }
        let continuation = self.continuation
        let readHighWater = self.readHighWater
        let listener: Listener
        do throws(NetworkError) {
            listener = try await Listener.start(host: host, port: requestedPort, loop: loop,
                                                log: OperatorLog.standardError) { fd in
                let connection = TCPConnection(fd: fd, loop: loop, writeHighWater: 1 << 20, readHighWater: readHighWater)
                do {
                    try connection.channel.register()
                    continuation.yield(connection)
                } catch {
                    connection.channel.close()
                }
            }
        } catch {
            if eventLoop == nil { await loop.stop() }
            throw error
        }
        state.withLock { s in
            s.loop = loop
            s.listener = listener
            s.port = listener.port
        }
        return listener.port
    }

    /// Stops listening and finishes `connections`. Accepted connections stay open until closed, except
    /// on a server with a loop of its own (`eventLoop` nil): stopping that loop closes them.
    public func stop() async {
        let (loop, listener) = state.withLock { s in
            let taken = (s.loop, s.listener)
            s.loop = nil
            s.listener = nil
            return taken
        }
        continuation.finish()
        guard let loop, let listener else { return }
        // Refused once the loop has stopped, which closed the listener itself.
        try? await loop.submit { listener.close() }
        if eventLoop == nil { await loop.stop() }
    }
}
