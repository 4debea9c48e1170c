import Contrail
import ContrailNATS
import ContrailServer
import ContrailWebSocket
import ContrailTestSupport
import Foundation
import Testing

final class Deck: ModelObject {
    @Property var title = ""
    @Property var score = 0
    @Property var cards: [Slide] = []
}

final class Slide: ModelObject {
    @Property var text = ""
    @Property var votes = 0
}

/// Several `ContrailServer`s sharing scopes through one real `nats-server -js`, with clients on each.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterServerTests {
    func makeServer(_ nats: NATSServerProcess, snapshotEvery: Int = 1_000) throws -> ContrailServer {
        try makeServer(at: nats.url, snapshotEvery: snapshotEvery)
    }

    func makeServer(at url: NATSServerURL, snapshotEvery: Int = 1_000) throws -> ContrailServer {
        try clusterServer([url]) { _, cluster in cluster.snapshotEvery = snapshotEvery }
    }

    func makeReplica(_ server: ContrailServer, name: String = "Deck") async throws -> (Client, Scope, Deck) {
        let scope = Scope(name: name)
        let deck = Deck()
        scope.root = deck
        var options = ClientOptions()
        options.replyTimeout = .seconds(60)
        options.connectTimeout = .seconds(60)
        let client = try await Client.sync(scope, connector: server.connector(), options: options)
        return (client, scope, deck)
    }

    /// Every change set settled, every replica in the same state, every server in the same state,
    /// and the servers hold the replicas' objects (a client also shows defaults it never sent).
    func converged(_ replicas: [(Client, Scope, Deck)], _ servers: [ContrailServer], scope: String = "Deck",
                   timeout: Duration = .seconds(60)) async -> Bool {
        await eventually(timeout) {
            guard replicas.allSatisfy({ ($0.0.session?.pendingChangeSets ?? 1) == 0 }) else { return false }
            let local = Set(replicas.map { $0.1.stateJSON() })
            var remote: Set<JSON> = []
            for server in servers { remote.insert(await server.state(ofScope: scope) ?? .null) }
            guard local.count == 1, remote.count == 1, let mine = local.first, let theirs = remote.first,
                  let objects = theirs["objects"]?.objectValue,
                  objects.count == mine["objects"]?.objectValue?.count else { return false }
            for (uuid, object) in objects {
                for (key, value) in object["properties"]?.objectValue ?? [:]
                    where mine["objects"]?[uuid]?["properties"]?[key] != value { return false }
            }
            return true
        }
    }

    @Test func clientsOnTwoServersSeeEachOthersChanges() async throws {
        let nats = try await NATSServerProcess.start()
        let one = try makeServer(nats)
        let two = try makeServer(nats)
        let a = try await makeReplica(one)
        let b = try await makeReplica(two)
        #expect(a.2.uuid == b.2.uuid, "both servers agree on the root UUID (the log's genesis)")
        let slide = Slide()
        slide.text = "hello"
        a.2.cards.append(slide)
        a.2.title = "from A"
        #expect(await eventually { b.2.cards.first?.text == "hello" && b.2.title == "from A" })
        b.2.cards.first?.votes = 3
        #expect(await eventually { slide.votes == 3 })
        let ok = await converged([a, b], [one, two])
        #expect(ok)
        if !ok {
            print("A", a.1.stateJSON(), "\nB", b.1.stateJSON())
            print("S1", await one.state(ofScope: "Deck") ?? .null, "\nS2", await two.state(ofScope: "Deck") ?? .null)
            print("pending", a.0.session?.pendingChangeSets ?? -1, b.0.session?.pendingChangeSets ?? -1)
        }
        // A scope nobody touched on the other server is separate.
        let other = try await makeReplica(two, name: "Other")
        #expect(other.2.cards.isEmpty)
        for replica in [a, b, other] { await replica.0.close() }
        await one.stop(); await two.stop(); await nats.stop()
    }

    /// The inspector's overview of a cluster server counts what its cluster scopes hold: the
    /// replica's objects and this server's subscribed sessions.
    @Test func theInspectorCountsAClusterScopesObjectsAndSessions() async throws {
        let nats = try await NATSServerProcess.start()
        let server = try clusterServer(nats) { options, _ in options.servesPages = true }
        let port = try await server.start()
        let a = try await makeReplica(server)
        a.2.cards.append(Slide(text: "one"))
        #expect(await eventually { (a.0.session?.pendingChangeSets ?? 1) == 0 })
        func overview() async throws -> JSON {
            let connection = try await TCPConnection.connect(host: "127.0.0.1", port: port)
            try await connection.send(Array("GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
            var response: [UInt8] = []
            while let bytes = try await connection.receive() { response += bytes }
            await connection.close()
            let text = String(decoding: response, as: UTF8.self)
            return try JSON(parsing: String(text[(text.range(of: "\r\n\r\n")?.upperBound ?? text.endIndex)...]))
        }
        let deck = try await overview()["scopes"]?[0]
        #expect(deck?["name"] == "Deck")
        #expect(deck?["objects"] == 2, "\(String(describing: deck))")  // the deck and its slide
        #expect(deck?["subscribers"] == 1, "\(String(describing: deck))")
        await a.0.close()
        await server.stop(); await nats.stop()
    }

    @Test(arguments: [(2, UInt64(7)), (2, UInt64(8)), (3, UInt64(11)), (3, UInt64(12))])
    func randomConcurrentEditsConvergeOnEveryServer(servers count: Int, seed: UInt64) async throws {
        let nats = try await NATSServerProcess.start()
        var servers: [ContrailServer] = []
        for _ in 0..<count { servers.append(try makeServer(nats, snapshotEvery: 10)) }
        var replicas: [(Client, Scope, Deck)] = []
        for index in 0..<(count * 2) { replicas.append(try await makeReplica(servers[index % count])) }
        var random = LCG(seed: seed)
        for _ in 0..<300 {
            let (_, scope, deck) = replicas[Int(random.next() % UInt64(replicas.count))]
            Self.randomEdit(deck, scope: scope, random: &random)
            if random.next() % 3 == 0 { await ChangeDelivery.main.drain() }
        }
        let ok = await converged(replicas, servers)
        #expect(ok, "replicas or servers diverged; seed \(seed), \(count) servers")
        if !ok {  // what diverged, for whoever meets this in CI
            for (index, replica) in replicas.enumerated() {
                print("replica \(index) (pending \(replica.0.session?.pendingChangeSets ?? -1)):", replica.1.stateJSON())
            }
            for (index, server) in servers.enumerated() { print("server \(index):", await server.state(ofScope: "Deck") ?? .null) }
        }
        for replica in replicas { await replica.0.close() }
        for server in servers { await server.stop() }
        await nats.stop()
    }

    @Test func aServerJoiningLateServesTheFullStateFromSnapshotAndLog() async throws {
        let nats = try await NATSServerProcess.start()
        let first = try makeServer(nats, snapshotEvery: 5)
        let writer = try await makeReplica(first)
        for index in 0..<40 {
            let slide = Slide()
            slide.text = "s\(index)"
            writer.2.cards.append(slide)
            writer.2.score = index
            await ChangeDelivery.main.drain()
        }
        #expect(await eventually { (writer.0.session?.pendingChangeSets ?? 1) == 0 })
        // The log was trimmed behind the snapshots: fewer messages than change sets.
        let connection = try await NATSConnection.connect(nats.url)
        let stream = try await JetStream(connection: connection).streamInfo("CONTRAIL_SCOPES")
        #expect(stream.state.messages < 40, "the log is trimmed behind snapshots (\(stream.state.messages) messages)")
        await connection.close()

        let late = try makeServer(nats)
        let reader = try await makeReplica(late)
        #expect(reader.2.cards.count == 40)
        #expect(reader.2.score == 39)
        #expect(reader.1.stateJSON() == writer.1.stateJSON())
        #expect(await late.state(ofScope: "Deck") == first.state(ofScope: "Deck"))
        await writer.0.close(); await reader.0.close()
        await first.stop(); await late.stop(); await nats.stop()
    }

    @Test func serversGoOnWhenANATSNodeOfAnR3ClusterDies() async throws {
        var nodes = try await NATSServerProcess.startCluster()
        var servers: [ContrailServer] = []
        for _ in 0..<2 {
            servers.append(
                try clusterServer(nodes.map(\.url)) { _, cluster in
                    cluster.replicas = 3
                    cluster.snapshotEvery = 10
                })
        }
        // The first fetches fail while the NATS cluster elects its leaders; the servers keep trying.
        var replicas: [(Client, Scope, Deck)] = []
        for index in 0..<4 {
            let server = servers[index % 2]
            let replica = try await withTimeout(.seconds(60)) { @MainActor in
                while true {
                    if let replica = try? await makeReplica(server) { return replica }
                }
            }
            replicas.append(replica)
        }
        var random = LCG(seed: 3)
        func edit(_ count: Int) async {
            for _ in 0..<count {
                let (_, scope, deck) = replicas[Int(random.next() % UInt64(replicas.count))]
                Self.randomEdit(deck, scope: scope, random: &random)
                await ChangeDelivery.main.drain()
            }
        }
        await edit(30)
        #expect(await converged(replicas, servers))
        await nodes[0].kill()
        await edit(30)
        #expect(await converged(replicas, servers), "after losing a NATS node")
        nodes[0] = try await nodes[0].restart()
        await nodes[1].kill()
        await edit(30)
        #expect(await converged(replicas, servers), "after the node came back and another one died")
        for replica in replicas { await replica.0.close() }
        for server in servers { await server.stop() }
        for node in nodes { await node.stop() }
    }

    @Test func aServerCutOffFromNATSCatchesUpWhenItReconnects() async throws {
        let nats = try await NATSServerProcess.start()
        let proxy = try await CuttableProxy(target: nats.port)
        let cutOff = try makeServer(at: NATSServerURL(host: "127.0.0.1", port: proxy.port))
        let other = try makeServer(nats)
        let a = try await makeReplica(cutOff)
        let b = try await makeReplica(other)
        b.2.title = "before"
        #expect(await eventually { a.2.title == "before" }, "notifications reach the other server")
        await proxy.cut()
        b.2.title = "while cut off"
        #expect(await eventually { (b.0.session?.pendingChangeSets ?? 1) == 0 }, "stored in the log meanwhile")
        proxy.restore()
        // Nothing is published after the reconnection: only catching up on reconnecting brings it.
        #expect(await eventually(.seconds(30)) { a.2.title == "while cut off" })
        await a.0.close(); await b.0.close()
        await cutOff.stop(); await other.stop(); await proxy.stop(); await nats.stop()
    }

    /// A server cut off while the log is trimmed behind snapshots finds a gap when it is back and
    /// restores the snapshot: its subscribed sessions get what they missed and later changes too
    /// (they kept the replica from before the restore, with no broadcasts, before).
    @Test func sessionsOfAServerThatRestoredASnapshotKeepSyncing() async throws {
        let nats = try await NATSServerProcess.start()
        let proxy = try await CuttableProxy(target: nats.port)
        let cutOff = try makeServer(at: NATSServerURL(host: "127.0.0.1", port: proxy.port))
        let other = try makeServer(nats, snapshotEvery: 3)
        let a = try await makeReplica(cutOff)
        let b = try await makeReplica(other)
        b.2.title = "before"
        #expect(await eventually { a.2.title == "before" }, "notifications reach the other server")
        await proxy.cut()
        for index in 0..<12 {
            b.2.cards.append(Slide(text: "s\(index)"))
            b.2.score = index
            await ChangeDelivery.main.drain()
            #expect(await eventually { (b.0.session?.pendingChangeSets ?? 1) == 0 })
        }
        proxy.restore()
        #expect(await eventually(.seconds(30)) { a.2.score == 11 && a.2.cards.count == 12 }, "what was missed arrives")
        b.2.title = "after"
        #expect(await eventually { a.2.title == "after" }, "later changes arrive too")
        #expect(await converged([a, b], [cutOff, other]))
        await a.0.close(); await b.0.close()
        await cutOff.stop(); await other.stop(); await proxy.stop(); await nats.stop()
    }

    @Test func aServerCutOffFromNATSRefusesNewSessionsUntilItIsBack() async throws {
        let nats = try await NATSServerProcess.start()
        let proxy = try await CuttableProxy(target: nats.port)
        let server = try makeServer(at: NATSServerURL(host: "127.0.0.1", port: proxy.port))
        let other = try makeServer(nats)
        let b = try await makeReplica(other)
        // Positive control: with NATS reachable, a session opens.
        let before = try await makeReplica(server)
        await before.0.close()

        await proxy.cut()
        // On the wire: the reply names the reason, then close 4096 with the typed reason.
        let transport = try await server.connector().connect(headers: [])
        try await transport.send(MessageFrame.encode([.sessionCreate(SessionCreate(version: "0.2.0"))], asArray: false))
        var frames: [String] = []
        var closed: TransportClosed?
        do throws(TransportClosed) { for try await frame in transport.frames { frames.append(frame) } } catch { closed = error }
        #expect(frames.count == 1 && frames[0].contains("server-unavailable"), "\(frames)")
        #expect(closed?.code == JetstreamCloseCode.denied)
        #expect(closed?.reason.contains("\"type\":\"server-unavailable\"") == true, "\(String(describing: closed))")
        // Through the client: a clear, typed denial.
        do {
            _ = try await Client(connector: server.connector()).connect()
            Issue.record("a server without NATS opened a session")
        } catch {
            guard case .serverUnavailable(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.hasPrefix("Server unavailable:"), "\(message)")
        }

        proxy.restore()
        b.2.title = "after"
        // The server keeps trying: once NATS is back, sessions open and see the shared state.
        var replica: (Client, Scope, Deck)?
        let deadline = ContinuousClock.now + .seconds(60)
        while replica == nil, ContinuousClock.now < deadline {
            replica = try? await makeReplica(server)
            if replica == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let a = try #require(replica, "no session within 60 s of NATS coming back")
        #expect(await eventually { a.2.title == "after" })
        await a.0.close(); await b.0.close()
        await server.stop(); await other.stop(); await proxy.stop(); await nats.stop()
    }

    @Test func withoutNATSTheFetchFailsWithAClearError() async throws {
        let server = try clusterServer([NATSServerURL(host: "127.0.0.1", port: try freePorts(1)[0])]) { _, cluster in
            cluster.requestTimeout = .seconds(2)
        }
        let scope = Scope(name: "Deck")
        scope.root = Deck()
        do {
            _ = try await Client.sync(scope, connector: server.connector(), options: ClientOptions())
            Issue.record("a server without NATS opened a session")
        } catch {
            guard case .serverUnavailable(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("cannot reach NATS"), "\(message)")
        }
        await server.stop()
    }

    /// One random edit: a value, an insert, a removal, a vote, or an atomic pair of changes.
    static func randomEdit(_ deck: Deck, scope: Scope, random: inout LCG) {
        let cards = deck.cards
        let pick = Int(random.next() % 100)
        let slot = Int(random.next() % UInt64(cards.count + 1))
        switch random.next() % 6 {
        case 0: deck.title = "t\(pick % 5)"
        case 1: deck.score = pick
        case 2, 3: deck.cards.insert(Slide(text: "c\(pick)"), at: slot)
        case 4:
            if !cards.isEmpty { deck.cards.remove(at: slot % cards.count) }
        default:
            scope.modifyAtomically {
                deck.score += 1
                cards.first?.votes += pick
            }
        }
    }
}

extension Slide {
    convenience init(text: String) {
        self.init()
        self.text = text
    }
}

/// A small deterministic generator (Knuth's MMIX LCG, high bits) for reproducible randomized tests.
struct LCG {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 29
    }
}
