import Contrail
import ContrailWebSocket
import Testing

@Suite struct WebSocketTransportTests {
    /// A server that echoes text frames, and closes with 4096 when told "deny".
    func startEchoServer() async throws -> (WebSocketServer, UInt16) {
        let server = WebSocketServer(host: "127.0.0.1", port: 0)
        let port = try await server.start()
        Task {
            for await connection in server.connections {
                Task {
                    for try await message in connection.messages {
                        if message == .text("deny") {
                            await connection.close(code: CloseCode(rawValue: 4096), reason: #"{"message":"denied"}"#)
                            return
                        }
                        try await connection.send(message)
                    }
                }
            }
        }
        return (server, port)
    }

    @Test func framesGoBothWays() async throws {
        let (server, port) = try await startEchoServer()
        let transport = try await WebSocketConnector(url: "ws://127.0.0.1:\(port)/").connect(headers: [("X-Jetstream-Test", "1")])
        try await transport.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":false}"#)
        var frames = transport.frames.makeAsyncIterator()
        #expect(try await frames.next() == #"{"type":"Ping","index":0,"ack":0,"resendMissing":false}"#)
        await transport.close(code: 1000, reason: "")
        await server.stop()
    }

    @Test func closeCodeReachesTheReader() async throws {
        let (server, port) = try await startEchoServer()
        let transport = try await WebSocketConnector(url: "ws://127.0.0.1:\(port)/").connect(headers: [])
        try await transport.send("deny")
        var frames = transport.frames.makeAsyncIterator()
        await #expect(throws: TransportClosed(code: 4096, reason: #"{"message":"denied"}"#)) {
            _ = try await frames.next()
        }
        await server.stop()
    }

    @Test func inMemoryPairCarriesFramesAndCloseCodes() async throws {
        let (client, server) = InMemoryTransport.pair()
        try await client.send("hello")
        var received = server.frames.makeAsyncIterator()
        #expect(try await received.next() == "hello")
        await server.close(code: 4097, reason: "expired")
        var clientFrames = client.frames.makeAsyncIterator()
        await #expect(throws: TransportClosed(code: 4097, reason: "expired")) { _ = try await clientFrames.next() }
        await #expect(throws: TransportClosed.self) { try await client.send("late") }
    }
}
