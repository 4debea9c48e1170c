import Contrail
import ContrailNATS
import ContrailTestSupport
import Foundation
import Testing
import ContrailSupport

/// A `contrail serve --nats` child process (the binary built next to the tests).
final class ServeProcess: Sendable {
    let port: UInt16
    /// The `contrail` process (its output holds the log unless started quiet).
    let child: ChildProcess

    private init(port: UInt16, child: ChildProcess) {
        self.port = port
        self.child = child
    }

    /// `ws://127.0.0.1:port/`.
    var url: String { "ws://127.0.0.1:\(port)/" }

    /// The `contrail` binary built next to the tests.
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("contrail")
    }

    /// Starts `contrail serve --port 0 --nats URL` and waits (up to 30 s) for its port.
    static func start(nats: NATSServerProcess) async throws -> ServeProcess {
        try await start(natsURL: nats.url.description)
    }

    /// Starts `contrail serve --port 0 --nats natsURL` with further `arguments` and `environment`
    /// (`--quiet` unless `quiet` is false) and waits (up to 30 s) for its port.
    static func start(natsURL: String, arguments: [String] = [], environment: [String: String] = [:],
                      quiet: Bool = true) async throws -> ServeProcess {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestFailure("\(binary.path) is missing: build with `swift build --build-tests` first")
        }
        let child = try ChildProcess(binary, ["serve", "--port", "0", "--nats", natsURL] + (quiet ? ["--quiet"] : []) + arguments,
                                     environment: environment)
        let port = try await child.port(after: "listening on ws://127.0.0.1:", terminator: { $0 == "/" })
        return ServeProcess(port: port, child: child)
    }

    /// SIGKILLs the server and waits until it has exited.
    func kill() async {
        await child.kill()
    }
}

@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterFailoverTests {
    @Test func killingAServerMidStreamLosesNothingAcknowledged() async throws {
        let nats = try await NATSServerProcess.start()
        let doomed = try await ServeProcess.start(nats: nats)
        let survivor = try await ServeProcess.start(nats: nats)
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(5), maximum: .milliseconds(50), jitter: 0.5)
        options.replyTimeout = .seconds(5)
        options.connectTimeout = .seconds(10)

        let writerScope = Scope(name: "Deck")
        let writerDeck = Deck()
        writerScope.root = writerDeck
        let writer = try await Client.sync(writerScope, urls: [doomed.url, survivor.url], options: options)
        let readerScope = Scope(name: "Deck")
        let readerDeck = Deck()
        readerScope.root = readerDeck
        let reader = try await Client.sync(readerScope, connector: WebSocketConnector(url: survivor.url), options: options)

        for index in 0..<40 {
            writerDeck.cards.append(Slide(text: "s\(index)"))
            await ChangeDelivery.main.drain()
            if index == 15 { await doomed.kill() }
        }
        let settled = await eventually {
            (writer.session?.pendingChangeSets ?? 1) == 0
                && readerDeck.cards.count == 40 && writerScope.stateJSON() == readerScope.stateJSON()
        }
        #expect(settled, "writer pending \(writer.session?.pendingChangeSets ?? -1), reader has \(readerDeck.cards.count)")
        // Every edit exactly once, in the writer's order.
        #expect(readerDeck.cards.map(\.text) == (0..<40).map { "s\($0)" })
        await writer.close(); await reader.close()
        await survivor.kill(); await nats.stop()
    }

    @Test func aFailingOverClientPassesAServerWithoutNATS() async throws {
        let nats = try await NATSServerProcess.start()
        let proxy = try await CuttableProxy(target: nats.port)
        await proxy.cut()
        let doomed = try await ServeProcess.start(nats: nats)
        let cutOff = try await ServeProcess.start(natsURL: "nats://127.0.0.1:\(proxy.port)")
        let survivor = try await ServeProcess.start(nats: nats)
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(5), maximum: .milliseconds(50), jitter: 0.5)
        options.connectTimeout = .seconds(10)

        let writerScope = Scope(name: "Deck")
        let writerDeck = Deck()
        writerScope.root = writerDeck
        let connector = FailoverConnector(urls: [doomed.url, cutOff.url, survivor.url])
        let writer = try await Client.sync(writerScope, connector: connector, options: options)
        let readerScope = Scope(name: "Deck")
        let readerDeck = Deck()
        readerScope.root = readerDeck
        let reader = try await Client.sync(readerScope, url: survivor.url, options: options)

        await doomed.kill()
        writerDeck.title = "after the failover"
        // The server cut off from NATS refuses the writer's new session; it moves on to the survivor.
        let settled = await eventually(.seconds(30)) {
            (writer.session?.pendingChangeSets ?? 1) == 0 && readerDeck.title == "after the failover"
        }
        #expect(settled, "writer pending \(writer.session?.pendingChangeSets ?? -1), status \(writer.status), last error \(String(describing: writer.lastError))")
        #expect(connector.currentURL == survivor.url)
        await writer.close(); await reader.close()
        await cutOff.kill(); await survivor.kill(); await proxy.stop(); await nats.stop()
    }

    @Test func aClientStartsOnTheFirstServerThatAnswers() async throws {
        let nats = try await NATSServerProcess.start()
        let dead = try await ServeProcess.start(nats: nats)
        await dead.kill()
        let live = try await ServeProcess.start(nats: nats)
        let connector = FailoverConnector(urls: [dead.url, live.url])
        let scope = Scope(name: "Deck")
        scope.root = Deck()
        let client = try await Client.sync(scope, connector: connector)
        #expect(connector.currentURL == live.url)
        #expect(client.status == .online)
        await client.close()

        // Positive control: the dead server alone cannot be reached.
        await #expect(throws: SyncError.self) {
            _ = try await Client(urls: [dead.url]).connect()
        }
        // No URL at all: a typed error, not a crash.
        await #expect(throws: SyncError.transport("no server URLs to connect to")) {
            _ = try await Client(urls: []).connect()
        }
        await live.kill(); await nats.stop()
    }
}
