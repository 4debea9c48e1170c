import Contrail
import ContrailNATS
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Presence (Protocol §8.20) across the servers of a cluster on a real `nats-server -js`: relayed
/// through NATS core subjects, never stored in the JetStream log, peers of another server leave
/// when it says so or when it stops refreshing them.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct PresenceClusterTests {
    func makeServer(_ nats: NATSServerProcess, timeout: Duration = .seconds(30)) throws -> ContrailServer {
        try clusterServer(nats) { options, _ in options.presenceTimeout = timeout }
    }

    /// The messages the scopes' stream holds.
    func storedMessages(_ nats: NATSServerProcess) async throws -> UInt64 {
        let connection = try await NATSConnection.connect(nats.url)
        defer { Task { await connection.close() } }
        return try await JetStream(connection: connection).streamInfo(ClusterOptions(servers: []).streamName).state.messages
    }

    @Test func peersOnTwoServersSeeEachOtherChangeAndLeave() async throws {
        let nats = try await NATSServerProcess.start()
        let one = try makeServer(nats)
        let two = try makeServer(nats)
        let (clientA, deckA) = try await deckReplica(one.connector())
        let (clientB, deckB) = try await deckReplica(two.connector())
        let a = try #require(deckA.scope)
        let b = try #require(deckB.scope)
        let stored = try await storedMessages(nats)
        try a.presence.publish(["name": "A"])
        try b.presence.publish(["name": "B"])
        #expect(await eventually { b.presence.peers.map(\.value) == [["name": "A"]] })
        #expect(await eventually { a.presence.peers.map(\.value) == [["name": "B"]] })
        try a.presence.publish(["name": "A", "cursor": [7, 8]])
        #expect(await eventually { b.presence.peers.first?.value == ["name": "A", "cursor": [7, 8]] })
        #expect(try await storedMessages(nats) == stored, "presence is never in the JetStream log")
        deckA.title = "stored"   // positive control: a change set is
        #expect(await eventually { (try? await storedMessages(nats)) ?? 0 > stored })
        await clientA.close()
        #expect(await eventually { b.presence.peers.isEmpty }, "A's server relays its leave")
        await clientB.close()
        await one.stop(); await two.stop()
        await nats.stop()
    }

    @Test func aPeerNoServerRefreshesLeavesAfterTheTimeout() async throws {
        let nats = try await NATSServerProcess.start()
        let server = try makeServer(nats, timeout: .seconds(2))
        let (client, deck) = try await deckReplica(server.connector())
        let scope = try #require(deck.scope)
        try scope.presence.publish(["name": "B"])
        // Another server, played by the test on the scope's presence subject.
        let connection = try await NATSConnection.connect(nats.url)
        let subject = "contrail.presence." + "Deck".utf8.map { String(format: "%02x", $0) }.joined()
        let watching = try await connection.subscribe(subject)
        let ghost: JSON = ["server": "ghost-server", "peer": "ghost-1", "user": "casper", "value": ["name": "Ghost"]]
        // Asked for its peers (a server that just joined the scope says hello), the server relays B.
        let hello: JSON = ["server": "ghost-server", "hello": true]
        let heard = await eventually(.seconds(60)) {
            try? await connection.publish(subject, payload: hello.serialized())
            try? await connection.publish(subject, payload: ghost.serialized())
            return scope.presence.peers.first?.value == ["name": "Ghost"]
        }
        #expect(heard, "the server shows a peer relayed from another server")
        #expect(scope.presence.peers.first?.user == "casper")
        let relayedB = try await withTimeout(.seconds(60)) {
            for await message in watching.messages {
                guard let json = try? JSON(parsing: message.payload) else { continue }
                if json["server"] != "ghost-server", json["value"] == ["name": "B"], json["peer"]?.stringValue != nil { return true }
            }
            return false
        }
        #expect(relayedB, "B was relayed to the other server (answering the hello, or refreshing)")
        // The ghost is not refreshed: it leaves after the timeout.
        #expect(await eventually(.seconds(60)) { scope.presence.peers.isEmpty }, "the ghost left by timeout")
        await watching.unsubscribe()
        await connection.close()
        await client.close()
        await server.stop()
        await nats.stop()
    }
}
