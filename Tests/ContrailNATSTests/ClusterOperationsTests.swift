import Contrail
import ContrailNATS
@testable import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Issue 28 in a cluster: a drained server (SIGTERM to a real `contrail serve --nats`) sends its
/// clients to another server without losing anything; readiness follows the link to NATS; the
/// cluster's metrics (publish latency, apply lag) count real publishes.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterOperationsTests {
    @Test func aDrainedServerSendsItsClientsToAnotherWithoutLosingAnything() async throws {
        let nats = try await NATSServerProcess.start()
        let doomed = try await ServeProcess.start(natsURL: nats.url.description, quiet: false)
        let survivor = try await ServeProcess.start(nats: nats)
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(5), maximum: .milliseconds(50), jitter: 0.5)
        options.replyTimeout = .seconds(5)
        options.connectTimeout = .seconds(10)

        let writerScope = Scope(name: "Deck")
        let writerDeck = Deck()
        writerScope.root = writerDeck
        let connector = FailoverConnector(urls: [doomed.url, survivor.url])
        let writer = try await Client.sync(writerScope, connector: connector, options: options)
        let readerScope = Scope(name: "Deck")
        let readerDeck = Deck()
        readerScope.root = readerDeck
        let reader = try await Client.sync(readerScope, url: survivor.url, options: options)
        let closes = ErrorLog()
        writer.onStatusChange(closes) { [weak writer] _ in if let error = writer?.lastError { closes.errors.append(error) } }

        for index in 0..<40 {
            writerDeck.cards.append(Slide(text: "s\(index)"))
            await ChangeDelivery.main.drain()
            if index == 15 { doomed.child.signal(SIGTERM) }   // pending change sets in flight
        }
        #expect(await doomed.child.waitForExit(timeout: .seconds(30)), "the drained server exits within its bound")
        if case .exited(let status)? = doomed.child.termination { #expect(status == 0) } else {
            Issue.record("termination \(String(describing: doomed.child.termination))")
        }
        #expect(doomed.child.text.contains("draining: refusing new sessions"))
        #expect(doomed.child.text.contains("drained: logs written out and synced"))
        let settled = await eventually {
            (writer.session?.pendingChangeSets ?? 1) == 0
                && readerDeck.cards.count == 40 && writerScope.stateJSON() == readerScope.stateJSON()
        }
        #expect(settled, "writer pending \(writer.session?.pendingChangeSets ?? -1), reader has \(readerDeck.cards.count)")
        #expect(readerDeck.cards.map(\.text) == (0..<40).map { "s\($0)" }, "every edit once, in order")
        #expect(connector.currentURL == survivor.url, "moved on to the other server")
        #expect(closes.errors.contains { if case .closedByServer(JetstreamCloseCode.draining, _) = $0 { true } else { false } },
                "the client heard the drain: \(closes.errors)")
        await writer.close(); await reader.close()
        await survivor.kill(); await nats.stop()
    }

    @Test func notReadyWhileCutOffFromNATS() async throws {
        let nats = try await NATSServerProcess.start()
        let proxy = try await CuttableProxy(target: nats.port)
        var options = ServerOptions()
        options.log = nil
        var cluster = ClusterOptions(servers: [NATSServerURL(host: "127.0.0.1", port: proxy.port)])
        cluster.requestTimeout = .seconds(2)
        options.cluster = cluster
        let core = ServerCore(options: options)
        #expect(core.advance(.started))
        let health = HealthEndpoint(core: core)
        #expect(await eventually(.seconds(30)) { await health.notReady() == nil }, "ready with NATS")
        await proxy.cut()
        #expect(await eventually(.seconds(30)) { await health.notReady()?.contains("NATS") == true }, "not ready without it")
        proxy.restore()
        #expect(await eventually(.seconds(60)) { await health.notReady() == nil }, "ready again once NATS answers")
        await core.cluster?.close()
        await proxy.stop(); await nats.stop()
    }

    @Test func clusterMetricsCountPublishesAndTheirLag() async throws {
        let nats = try await NATSServerProcess.start()
        let server = try clusterServer(nats)
        let (client, deck) = try await deckReplica(server.connector())
        for index in 0..<5 {
            deck.title = "t\(index)"
            await ChangeDelivery.main.drain()
        }
        #expect(await eventually { (client.session?.pendingChangeSets ?? 1) == 0 })
        let text = try PrometheusText(parsing: await server.metricsText())
        #expect(text.value("contrail_nats_connected") == 1)
        #expect(text.value("contrail_nats_publish_seconds_count") ?? 0 >= 1)
        #expect(text.family("contrail_nats_apply_lag_seconds")?.type == "histogram")
        #expect(text.value("contrail_change_sets_total", ["result": "accepted"]) ?? 0 >= 1)
        await client.close()
        await server.stop()
        await nats.stop()
    }
}

/// The errors a client reported, in order (an observer object for `onStatusChange`).
@MainActor
final class ErrorLog {
    var errors: [SyncError] = []
}
