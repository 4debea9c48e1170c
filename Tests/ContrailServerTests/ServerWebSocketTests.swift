import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation
import Testing

@Suite("Server over WebSocket")
struct ServerWebSocketTests {
    private func nextMessage(_ connection: WebSocketConnection) async throws -> JSON {
        var iterator = connection.messages.makeAsyncIterator()
        guard case .text(let text)? = try await iterator.next() else { throw TransportClosed(code: nil, reason: "no frame") }
        let frame = try JSON(parsing: text)
        return try #require(frame[0])
    }

    @Test func sessionAndFetchOverLoopbackAndResumeByQueryToken() async throws {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)  // the main actor may be busy with a large test for a while
        options.log = nil
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        #expect(port != 0)
        #expect(try await server.start() == port)
        let connection = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/sync")
        try await connection.send(.text(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#))
        let reply = try await nextMessage(connection)
        let token = try #require(reply["sessionToken"]?.stringValue)
        try await connection.send(.text(#"{"type":"ScopeFetch","index":1,"name":"S","params":{}}"#))
        let fetchReply = try await nextMessage(connection)
        #expect(fetchReply["type"] == "ScopeFetchReply")
        #expect(fetchReply["scopeIndex"] == 0)
        await connection.close()
        // Resume with the token in the query string (lowercase suffix, §1.3).
        let resumed = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/?x-jetstream-sessiontoken=\(token)")
        try await resumed.send(.text(#"{"type":"Ping","index":0,"ack":1,"resendMissing":true}"#))
        var iterator = resumed.messages.makeAsyncIterator()
        guard case .text(let text)? = try await iterator.next() else { Issue.record("no resend frame"); return }
        let frame = try JSON(parsing: text)
        #expect(frame[0]?["type"] == "Ping")
        #expect(frame[0]?["ack"] == 1)
        #expect(frame[1]?["type"] == "ScopeState")
        await resumed.close()
        await server.stop()
    }
}
