import Contrail
import ContrailNATS
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// Interest: a cluster server follows only the scopes its sessions have fetched, and stops
/// following one (and drops it from memory) once no session has been subscribed for the idle timeout.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterInterestTests {
    func makeServer(_ nats: NATSServerProcess, idle: Duration = .seconds(60)) throws -> ContrailServer {
        try clusterServer(nats) { options, cluster in
            options.servesPages = true
            options.scopeIdleTimeout = idle
            cluster.catchUpInterval = .milliseconds(50)
        }
    }

    func replica(_ server: ContrailServer) async throws -> (Client, Scope, Deck) {
        let scope = Scope(name: "Deck")
        let deck = Deck()
        scope.root = deck
        return (try await Client.sync(scope, connector: server.connector()), scope, deck)
    }

    /// The object count the inspector shows for scope "Deck" (0 while it is not in memory).
    func objects(on port: UInt16) async throws -> Int? {
        let connection = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        try await connection.send(Array("GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        var response: [UInt8] = []
        while let bytes = try await connection.receive() { response += bytes }
        await connection.close()
        let text = String(decoding: response, as: UTF8.self)
        let json = try JSON(parsing: String(text[(text.range(of: "\r\n\r\n")?.upperBound ?? text.endIndex)...]))
        let scopes = json["scopes"]?.arrayValue ?? []
        return scopes.first { $0["name"] == "Deck" }?["objects"]?.int64Value.map { Int($0) }
    }

    @Test func aServerStopsFollowingAScopeNoSessionUsesAndLoadsItAgainOnTheNextFetch() async throws {
        let nats = try await NATSServerProcess.start()
        let idle = try makeServer(nats, idle: .milliseconds(300))
        let idlePort = try await idle.start()
        let writing = try makeServer(nats)
        let watching = try makeServer(nats)
        let watchingPort = try await watching.start()
        let a = try await replica(idle)
        let w = try await replica(writing)
        let c = try await replica(watching)
        w.2.title = "one"
        #expect(await eventually(.seconds(30)) { a.2.title == "one" && c.2.title == "one" })
        // Positive control: while a session is subscribed, the server holds the scope.
        #expect(try await objects(on: idlePort) == 1)

        _ = try await a.0.session?.detach(a.1)
        #expect(await eventually(.seconds(30)) { (try? await objects(on: idlePort)) == 0 }, "the idle scope left memory")

        for index in 0..<3 { w.2.cards.append(Slide(text: "s\(index)")) }
        // Once the server still following it has applied the writes, the idle one has not.
        #expect(await eventually(.seconds(30)) { (try? await objects(on: watchingPort)) == 4 })
        #expect(try await objects(on: idlePort) == 0, "a server with no session on the scope does not apply its changes")

        // The next fetch loads it again, with everything written meanwhile.
        let again = try await replica(idle)
        #expect(again.2.cards.map(\.text) == ["s0", "s1", "s2"] && again.2.title == "one")
        #expect(try await objects(on: idlePort) == 4)
        w.2.title = "two"
        #expect(await eventually(.seconds(30)) { again.2.title == "two" }, "and follows it again")
        for client in [a.0, w.0, c.0, again.0] { await client.close() }
        await idle.stop(); await writing.stop(); await watching.stop(); await nats.stop()
    }
}
