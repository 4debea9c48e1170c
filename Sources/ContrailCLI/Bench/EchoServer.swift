import ContrailWebSocket

/// A bare WebSocket server for the sync benchmark's baselines: it echoes every message, and answers
/// `push N` with N copies of the frame that follows.
struct EchoServer {
    let server: WebSocketServer
    let port: UInt16

    static func start() async throws -> EchoServer {
        let server = WebSocketServer(host: "127.0.0.1", port: 0)
        let port = try await server.start()
        Task {
            await withDiscardingTaskGroup { group in
                for await connection in server.connections {
                    group.addTask { await serve(connection) }
                }
            }
        }
        return EchoServer(server: server, port: port)
    }

    private static func serve(_ connection: WebSocketConnection) async {
        do {
            var messages = connection.messages.makeAsyncIterator()
            while let message = try await messages.next() {
                guard case .text(let text) = message, text.hasPrefix("push "), let count = Int(text.dropFirst(5)),
                      let frame = try await messages.next() else {
                    try await connection.send(message)
                    continue
                }
                for _ in 0..<count { try await connection.send(frame) }
            }
        } catch {}
    }

    /// Frames per second a bare server pushes to `receivers` connections (each gets `frames`).
    static func pushRate(receivers: Int, frames: Int, frame: String) async throws -> Double {
        let echo = try await start()
        let connections = try await WebSocketBench.openWebSockets(receivers, port: echo.port, options: .init())
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    var messages = connection.messages.makeAsyncIterator()
                    try await connection.send(.text("push \(frames)"))
                    try await connection.send(.text(frame))
                    for _ in 0..<frames {
                        guard try await messages.next() != nil else { throw SyncBenchError("push ended early") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Stopwatch.seconds(ContinuousClock.now - start)
        for connection in connections { await connection.close() }
        await echo.server.stop()
        return Double(receivers * frames) / seconds
    }
}
