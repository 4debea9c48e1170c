import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation
import Testing

/// One writer pipelining change sets to readers over real WebSockets, where each connection's frames
/// are handled on its event loop and a burst's deliveries wait for the loop to go idle: every reader
/// gets every change, once, in the writer's order, and a reader that stops reading holds back
/// neither the writer nor the other readers, and still gets everything once it reads again.
@Suite("Server fan-out over WebSocket")
struct ServerFanOutTests {
    /// A started server with `writer` and `readers` sessions on scope "S" over WebSocket; the
    /// root's UUID. `slowOptions`: the options of one more reader, returned last in `readers`.
    private func fanOut(readers count: Int, options: ServerOptions = Wire.options(), slowOptions: WebSocketOptions? = nil)
        async throws -> (ContrailServer, writer: ServerTestClient, readers: [ServerTestClient], root: String)
    {
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        var readers: [ServerTestClient] = []
        for _ in 0..<count { readers.append(try await ServerTestClient.connect(port: port)) }
        if let slowOptions {
            let connection = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: slowOptions)
            readers.append(ServerTestClient(transport: WebSocketTransport(connection)))
        }
        for reader in readers {
            try await reader.createSession()
            _ = try await reader.fetch("S", index: 1)
        }
        let writer = try await ServerTestClient.connect(port: port)
        try await writer.createSession()
        let (_, state) = try await writer.fetch("S", index: 1)
        return (server, writer, readers, try #require(state["rootUUID"]?.stringValue))
    }

    /// Sends change sets 1...`count` (index n + 1 sets `x` = n, with `padding`) without waiting for replies.
    private func pipeline(_ writer: any SyncTransport, root: String, count: Int, padding: String = "") async throws {
        for n in 1...count {
            var properties: [String: JSON] = ["x": .int(Int64(n))]
            if !padding.isEmpty { properties["pad"] = .string(padding) }
            let sync: JSON = ["type": "ScopeSync", "index": .int(Int64(n + 1)), "scopeIndex": 0,
                              "fragments": [Wire.fragment("change", root, "Root", properties)]]
            try await writer.send(sync.jsonString)
        }
    }

    /// The `replyTo` of the next `count` replies.
    private func replies(_ writer: ServerTestClient, count: Int) async throws -> [Int] {
        var seen: [Int] = []
        while seen.count < count {
            let message = try await writer.next(timeout: .seconds(120))
            guard message["type"] == "ScopeSyncReply" else { continue }
            #expect(message["fragmentReplies"]?[0] == [:], "\(message)")
            seen.append(Int(message["replyTo"]?.int64Value ?? -1))
        }
        return seen
    }

    /// The `x` of the next `count` broadcasts, checking their indices go up by one from 3 (after the
    /// fetch reply and state).
    private func broadcasts(_ reader: ServerTestClient, count: Int) async throws -> [Int] {
        var values: [Int] = []
        var index = 2
        while values.count < count {
            let message = try await reader.next(timeout: .seconds(120))
            #expect(message["type"] == "ScopeSync", "\(message)")
            index += 1
            #expect(message["index"] == .int(Int64(index)))
            values.append(Int(message["fragments"]?[0]?["properties"]?["x"]?.int64Value ?? -1))
        }
        return values
    }

    @Test func pipelinedChangeSetsReachEveryReaderOnceInOrder() async throws {
        let (server, writer, readers, root) = try await fanOut(readers: 3)
        let count = 400
        try await pipeline(writer.transport, root: root, count: count)
        #expect(try await replies(writer, count: count) == Array(2...(count + 1)))
        for reader in readers {
            #expect(try await broadcasts(reader, count: count) == Array(1...count))
        }
        // Nothing more was sent: the next message each reader gets answers what it sends now.
        for reader in readers {
            try await reader.send(#"{"type":"ScopeFetch","index":2,"name":"Marker","params":{}}"#)
            let next = try await reader.next(timeout: .seconds(120))
            #expect(next["type"] == "ScopeFetchReply" && next["replyTo"] == 2, "\(next)")
        }
        await server.stop()
    }

    @Test func aReaderThatStopsReadingHoldsNobodyBackAndLosesNothing() async throws {
        var options = Wire.options()
        options.maxResendBytes = 256 << 20
        // The slow reader takes little into its own buffer, so the server's socket and write buffer
        // fill (its writer then waits in a task of its own) long before the writer is done.
        var slowOptions = WebSocketOptions()
        slowOptions.readBufferHighWater = 16 << 10
        let (server, writer, readers, root) = try await fanOut(readers: 1, options: options, slowOptions: slowOptions)
        let (fast, slow) = (readers[0], readers[1])
        let count = 600
        let padding = String(repeating: "p", count: 16 << 10)  // 600 × 16 KiB: about 10 MB to each reader
        let transport = writer.transport
        async let sent: Void = pipeline(transport, root: root, count: count, padding: padding)
        // The writer's replies and the fast reader's broadcasts all arrive while `slow` reads nothing.
        #expect(try await replies(writer, count: count) == Array(2...(count + 1)))
        #expect(try await broadcasts(fast, count: count) == Array(1...count))
        try await sent
        // Then the slow reader gets everything, in order.
        #expect(try await broadcasts(slow, count: count) == Array(1...count))
        await server.stop()
    }
}
