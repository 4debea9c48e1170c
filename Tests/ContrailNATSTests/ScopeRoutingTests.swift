import Contrail
import ContrailNATS
import ContrailServer
import ContrailWebSocket
import ContrailTestSupport
import Foundation
import Testing

/// Scope affinity (README: Running a cluster): clients put the scope name in the URL's query
/// (`?scope=NAME`), which a load balancer hashes on; the server ignores the parameter, so a routed
/// client and an unrouted one on another server sync alike, and a resume through the routed URL
/// (the token added as `&x-jetstream-sessiontoken=`) finds its session.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ScopeRoutingTests {
    func makeServer(_ nats: NATSServerProcess) throws -> ContrailServer {
        try clusterServer(nats)
    }

    @Test func routedAndUnroutedClientsOnTwoServersSync() async throws {
        let nats = try await NATSServerProcess.start()
        let one = try makeServer(nats)
        let two = try makeServer(nats)
        let (portOne, portTwo) = (try await one.start(), try await two.start())
        let routed = try await deckReplica(url: "ws://127.0.0.1:\(portOne)/?scope=Deck")
        let alsoRouted = try await deckReplica(url: "ws://127.0.0.1:\(portOne)/sync?scope=Deck&v=%20")
        let unrouted = try await deckReplica(url: "ws://127.0.0.1:\(portTwo)/")
        routed.1.title = "from the routed client"
        #expect(await eventually { alsoRouted.1.title == "from the routed client" && unrouted.1.title == "from the routed client" })
        unrouted.1.score = 7
        #expect(await eventually { routed.1.score == 7 && alsoRouted.1.score == 7 })
        #expect(await one.state(ofScope: "Deck") == (await two.state(ofScope: "Deck")))
        for client in [routed.0, alsoRouted.0, unrouted.0] { await client.close() }
        await one.stop()
        await two.stop()
        await nats.stop()
    }

    @Test func resumeThroughTheRoutedURL() async throws {
        let nats = try await NATSServerProcess.start()
        let server = try makeServer(nats)
        let port = try await server.start()
        let connection = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/?scope=S")
        try await connection.send(.text(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#))
        let token = try #require(try await firstMessage(connection)["sessionToken"]?.stringValue)
        try await connection.send(.text(#"{"type":"ScopeFetch","index":1,"name":"S","params":{}}"#))
        #expect(try await firstMessage(connection)["type"] == "ScopeFetchReply")
        await connection.close()
        let resumed = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/?scope=S&x-jetstream-sessiontoken=\(token)")
        try await resumed.send(.text(#"{"type":"Ping","index":0,"ack":1,"resendMissing":true}"#))
        let ping = try await firstMessage(resumed)
        #expect(ping["type"] == "Ping")
        #expect(ping["ack"] == 1, "the server knows the session: it acknowledges what it received")
        await resumed.close()
        // The control: an unknown token in the same place is refused (the parameter is read).
        let refused = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/?scope=S&x-jetstream-sessiontoken=unknown")
        await #expect(throws: (any Error).self) {
            // The server may have closed the connection before this send: that is the refusal too.
            try await refused.send(.text(#"{"type":"Ping","index":0,"ack":1,"resendMissing":true}"#))
            while true { _ = try await firstMessage(refused) }
        }
        await server.stop()
        await nats.stop()
    }

    private func firstMessage(_ connection: WebSocketConnection) async throws -> JSON {
        var iterator = connection.messages.makeAsyncIterator()
        guard case .text(let text)? = try await iterator.next() else {
            throw TransportClosed(code: nil, reason: "no frame")
        }
        return try #require(try JSON(parsing: text)[0])
    }
}
