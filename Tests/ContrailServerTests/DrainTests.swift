import Contrail
@testable import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Graceful drain (issue 28): SIGTERM to a real `contrail serve` closes every session with 4099,
/// writes out and syncs the logs and exits within its bound; a client with pending change sets
/// reconnects (to the restarted server, or another one) and loses nothing.
@MainActor
@Suite(.timeLimit(.minutes(5)))
struct DrainTests {
    static var fastReconnect: ClientOptions {
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(5), maximum: .milliseconds(100), jitter: 0.5)
        options.connectTimeout = .seconds(20)
        options.replyTimeout = .seconds(10)
        return options
    }

    @Test func sigtermDrainsAndTheRestartedServerGetsEveryPendingChangeSet() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-drain-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await ServerProcess(data: directory)
        let url = "ws://127.0.0.1:\(first.port)/"
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, url: url, options: Self.fastReconnect)
        for index in 0..<30 {
            let card = Card()
            card.text = "c\(index)"
            board.cards.append(card)
            await ChangeDelivery.main.drain()
            if index == 10 {
                // Change sets 0...10 are in flight or acknowledged; 11...29 are made while it drains
                // and while no server runs: they wait in the client.
                let termination = await first.terminate()
                #expect(termination == .exited(0), "a drain exits cleanly: \(String(describing: termination))")
            }
        }
        #expect(first.log.contains("draining: refusing new sessions"))
        #expect(first.log.contains("drained: logs written out and synced"))
        #expect(client.status != .online)
        if case .closedByServer(let code, _)? = client.lastError { #expect(code == JetstreamCloseCode.draining) }

        // The same data directory and port: the client reconnects by itself.
        let second = try await ServerProcess(data: directory, arguments: ["--port", "\(first.port)"])
        let settled = await eventually(.seconds(60)) { client.status == .online && (client.session?.pendingChangeSets ?? 1) == 0 }
        #expect(settled, "status \(client.status), pending \(client.session?.pendingChangeSets ?? -1), error \(String(describing: client.lastError))")
        // A fresh replica sees every change set once, in order.
        let replicaScope = Scope(name: "Board")
        let replica = Board()
        replicaScope.root = replica
        let reader = try await Client.sync(replicaScope, url: url, options: Self.fastReconnect)
        #expect(replica.cards.map(\.text) == (0..<30).map { "c\($0)" })
        await reader.close()
        await client.close()
        try await second.kill()
    }

    @Test func drainClosesSessionsWith4099AndRefusesNewOnes() async throws {
        let (doomed, doomedPort) = try await startPageServer { @Sendable options in options.servesMetrics = true }
        let (other, otherPort) = try await startPageServer()
        let connector = FailoverConnector(urls: ["ws://127.0.0.1:\(doomedPort)/", "ws://127.0.0.1:\(otherPort)/"])
        let scope = Scope(name: "Board")
        scope.root = Board()
        let client = try await Client.sync(scope, connector: connector, options: Self.fastReconnect)
        #expect(connector.currentURL == "ws://127.0.0.1:\(doomedPort)/")
        #expect(await doomed.drain(timeout: .seconds(60)), "drained within the bound")
        let metrics = try PrometheusText(parsing: await doomed.metricsText())
        #expect(metrics.value("contrail_sessions_closed_total", ["reason": "drained"]) == 1)
        #expect(metrics.value("contrail_ready") == 0)
        // The client moved on to the other server, with a new session.
        #expect(await eventually(.seconds(30)) { client.status == .online && connector.currentURL == "ws://127.0.0.1:\(otherPort)/" })
        #expect(await doomed.drain(timeout: .seconds(1)), "a second drain returns at once")
        // A drained server takes no new connection (positive control: the other one does).
        await #expect(throws: (any Error).self) { _ = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(doomedPort)/") }
        let fresh = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(otherPort)/")
        await fresh.close()
        await client.close()
        await other.stop()
    }

    @Test func aConnectionArrivingWhileDrainingIsToldToGoElsewhere() async throws {
        var options = ServerOptions()
        options.log = nil
        let core = ServerCore(options: options)
        #expect(core.advance(.started))
        for draining in [false, true] {
            if draining { #expect(core.advance(.drain)) }
            let (client, server) = InMemoryTransport.pair()
            let connection = ServerConnection(transport: server, headers: [], peer: ClientAddress.inProcess, core: core)
            Task { await connection.run() }
            var frames = client.frames.makeAsyncIterator()
            if draining {
                do {
                    _ = try await frames.next()
                    Issue.record("a draining server answered a new connection")
                } catch {
                    #expect(error.code == JetstreamCloseCode.draining)
                    #expect(error.reason.contains("server-draining"))
                }
                #expect(core.metrics.sessionsRefused(.draining) == 1)
            } else {
                // Positive control: while serving, the connection waits for its SessionCreate.
                try await client.send(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#)
                let reply = try await frames.next()
                #expect(reply?.contains("sessionToken") == true)
                await client.close(code: 1000, reason: "")
            }
        }
        _ = core.stopAll()
    }
}
