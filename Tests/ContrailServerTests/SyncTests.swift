import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Clients against a real `ContrailServer` over in-memory transports.
@MainActor
@Suite struct SyncTests {
    /// The virtual time the test's clients wait on: the server answers at once, so only reconnect
    /// backoffs need it to move (`converge` ends those as they start).
    let clock = TestClock()

    func makeServer(_ configure: (inout ServerOptions) -> Void = { _ in }) throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)  // the main actor may be busy with a large test for a while
        options.log = nil
        configure(&options)
        return try ContrailServer(options: options)
    }

    /// A client with its own replica of the scope "Board".
    func makeReplica(_ connector: any SyncConnector, name: String = "Board") async throws -> (Client, Scope, Board) {
        let scope = Scope(name: name)
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, connector: connector, options: testOptions(clock: clock))
        return (client, scope, board)
    }

    /// Waits until every pending change set has settled and every replica shows the same state,
    /// ending reconnect backoffs as they start.
    func converge(_ replicas: [(Client, Scope, Board)], timeout: Duration = .seconds(60)) async -> Bool {
        await eventually(timeout) {
            clock.endPendingBackoff()
            return replicas.allSatisfy { ($0.0.session?.pendingChangeSets ?? 1) == 0 }
                && Set(replicas.map { $0.1.stateJSON() }).count == 1
        }
    }

    @Test func twoClientsSeeEachOthersChanges() async throws {
        let server = try makeServer()
        let a = try await makeReplica(server.connector())
        let b = try await makeReplica(server.connector())
        #expect(a.2.uuid == b.2.uuid, "both roots took over the server's root UUID")
        let card = Card()
        card.text = "hello"
        a.2.cards.append(card)
        a.2.title = "from A"
        #expect(await eventually { b.2.cards.first?.text == "hello" && b.2.title == "from A" })
        b.2.cards.first?.votes = 3
        #expect(await eventually { card.votes == 3 })
        #expect(await converge([a, b]))
        await a.0.close(); await b.0.close(); await server.stop()
    }

    @Test func deniedSessionAndDeniedFetchSurfaceAsErrors() async throws {
        let server = try makeServer { options in
            options.sessionHook = { params, _ in params["token"] == "secret" ? .allowEverything : .deny() }
            options.fetchHook = { name, _, _ in name == "Forbidden" ? WireErrorBody(message: "No access", type: "forbidden") : nil }
        }
        var options = testOptions()
        options.sessionParams = ["token": "wrong"]
        let denied = Client(connector: server.connector(), options: options)
        await #expect(throws: SyncError.sessionDenied("Session creation denied")) { _ = try await denied.connect() }
        options.sessionParams = ["token": "secret"]
        let client = Client(connector: server.connector(), options: options)
        let session = try await client.connect()
        let scope = Scope(name: "Forbidden")
        scope.root = Board()
        await #expect(throws: SyncError.fetchFailed(WireErrorBody(message: "No access", type: "forbidden"))) {
            try await session.fetch(scope)
        }
        await client.close(); await server.stop()
    }

    @Test func atomicChangeSetsAreAllOrNothing() async throws {
        let server = try makeServer()
        let a = try await makeReplica(server.connector())
        let b = try await makeReplica(server.connector())
        a.2.cards.append(Card())
        #expect(await eventually { b.2.cards.count == 1 })
        let stale = try #require(b.2.cards.first)
        b.0.session?.setMode(.pushOnly, for: b.1)
        a.2.cards.removeAll()
        #expect(await converge([a]))
        let atomic = try #require(b.1.modifyAtomically {
            b.2.title = "atomic"
            stale.text = "edit of a removed card"
        })
        #expect(await atomic.settled() == .reverted)
        #expect(b.2.title == "")
        let state = try #require(await server.state(ofScope: "Board"))
        let root = state["objects"]?[a.2.uuid.wireString]?["properties"]?["title"]
        #expect(root == nil || root == "", "the server applied nothing of the atomic change set")
        b.0.session?.setMode(.realtime, for: b.1)
        #expect(await converge([a, b]))
        await a.0.close(); await b.0.close(); await server.stop()
    }

    @Test func offlineEditsAreDeliveredExactlyOnce() async throws {
        let server = try makeServer()
        let switchable = SwitchableConnector(server.connector())
        let a = try await makeReplica(switchable)
        let b = try await makeReplica(server.connector())
        a.2.cards.append(Card())          // in flight when the network goes down
        await switchable.cut()
        for index in 0..<3 {
            let card = Card()
            card.votes = index
            a.2.cards.append(card)
            await ChangeDelivery.main.drain()
        }
        a.2.score = 42
        #expect(await eventually { a.0.status == .connecting })
        switchable.restore()
        await clock.endBackoff()
        #expect(await converge([a, b]))
        #expect(b.2.cards.count == 4)
        #expect(Set(b.2.cards.map(\.uuid)).count == 4)
        #expect(b.2.score == 42)
        await a.0.close(); await b.0.close(); await server.stop()
    }

    @Test func serverRestartLosesNothingAcknowledged() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try makeServer { $0.dataDirectory = directory }
        let router = RoutingConnector(first.connector())
        let a = try await makeReplica(router)
        let b = try await makeReplica(router)
        a.2.title = "acknowledged"
        a.2.cards.append(Card())
        #expect(await converge([a, b]))
        router.route(to: nil)
        await first.stop()
        #expect(await eventually { a.0.status == .connecting && b.0.status == .connecting })
        b.2.score = 5                      // an offline edit while the server is down
        let second = try makeServer { $0.dataDirectory = directory }
        router.route(to: second.connector())
        #expect(await converge([a, b]))
        #expect(a.2.title == "acknowledged" && a.2.cards.count == 1 && a.2.score == 5)
        let state = try #require(await second.state(ofScope: "Board"))
        #expect(state["objects"]?[a.2.uuid.wireString]?["properties"]?["score"] == 5)
        await a.0.close(); await b.0.close(); await second.stop()
    }

    @Test func unsentChangeSetsSurviveAProcessRestartThroughTheFragmentLog() async throws {
        let logURL = FileManager.default.temporaryDirectory.appending(path: "contrail-client-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: logURL) }
        let server = try makeServer()
        let observer = try await makeReplica(server.connector())
        // The first "process": fetches, goes offline, edits, and dies without having sent the edit.
        do {
            let switchable = SwitchableConnector(server.connector())
            let scope = Scope(name: "Board")
            let board = Board()
            scope.root = board
            let log = FragmentLog(url: logURL)
            try log.attach(to: scope)
            let client = try await Client.sync(scope, connector: switchable, options: testOptions(clock: clock))
            await switchable.cut()
            board.title = "written offline"
            board.cards.append(Card())
            await ChangeDelivery.main.drain()
            #expect(client.session?.pendingChangeSets == 1)
            try log.close()
            await client.close()
        }
        // The second "process": restores from the log and sends what the server never acknowledged.
        let scope = Scope(name: "Board")
        let log = FragmentLog(url: logURL)
        let report = try log.attach(to: scope)
        #expect(report.pendingChangeSets == 1)
        let board = try #require(scope.root as? Board)
        #expect(board.title == "written offline")
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions(clock: clock))
        let replica = (client, scope, board)
        let converged = await converge([replica, observer])
        #expect(converged)
        if !converged {
            print("pending", client.session?.pendingChangeSets as Any, observer.0.session?.pendingChangeSets as Any)
            print(Self.differences(scope.stateJSON(), observer.1.stateJSON()))
            print(board.title, board.cards.count, observer.2.title)
        }
        #expect(observer.2.title == "written offline")
        #expect(observer.2.cards.count == 1)
        try log.close()
        // Settled now: a third start has nothing left to send.
        let third = Scope(name: "Board")
        let reopened = FragmentLog(url: logURL)
        #expect(try reopened.attach(to: third).pendingChangeSets == 0)
        try reopened.close()
        await client.close(); await observer.0.close(); await server.stop()
    }

    @Test(arguments: (1...12).map { (Int($0 % 2) + 2, UInt64($0)) })
    func replicasConvergeAfterRandomConcurrentEdits(clients: Int, seed: UInt64) async throws {
        let server = try makeServer()
        var replicas: [(Client, Scope, Board)] = []
        for _ in 0..<clients { replicas.append(try await makeReplica(server.connector())) }
        var random = SplitMix64(seed: seed)
        for _ in 0..<300 {
            let (_, scope, board) = replicas[Int(random.next() % UInt64(clients))]
            for _ in 0...(random.next() % 3) { Self.randomEdit(board, scope: scope, random: &random) }
            switch random.next() % 4 {
            case 0: await ChangeDelivery.main.drain()
            case 1: await Task.yield()
            default: break
            }
        }
        let converged = await converge(replicas)
        #expect(converged, "replicas diverged; seed \(seed), \(clients) clients")
        if !converged {
            let server = await server.state(ofScope: "Board")
            print("seed \(seed) pending \(replicas.map { $0.0.session?.pendingChangeSets ?? -1 })")
            for replica in replicas { print(Self.differences(replica.1.stateJSON(), server ?? .null)) }
        }
        if converged, let server = await server.state(ofScope: "Board") {
            let local = replicas[0].1.stateJSON()
            for (uuid, object) in server["objects"]?.objectValue ?? [:] {
                for (key, value) in object["properties"]?.objectValue ?? [:] {
                    #expect(local["objects"]?[uuid]?["properties"]?[key] == value, "server and replicas differ at \(uuid).\(key); seed \(seed)")
                }
            }
            let counts = (local["objects"]?.objectValue?.count, server["objects"]?.objectValue?.count)
            #expect(counts.0 == counts.1, "seed \(seed)")
            if counts.0 != counts.1 { print("seed \(seed)\n" + Self.differences(local, server)) }
        }
        for replica in replicas { await replica.0.close() }
        await server.stop()
    }

    /// Where a replica's state differs from the server's (for failure messages).
    static func differences(_ local: JSON, _ server: JSON) -> String {
        var lines: [String] = []
        let localObjects = local["objects"]?.objectValue ?? [:]
        let serverObjects = server["objects"]?.objectValue ?? [:]
        for uuid in Set(localObjects.keys).union(serverObjects.keys).sorted() {
            guard let mine = localObjects[uuid], let theirs = serverObjects[uuid] else {
                lines.append("\(uuid): only \(localObjects[uuid] == nil ? "server" : "replica")")
                continue
            }
            for (key, value) in theirs["properties"]?.objectValue ?? [:] where mine["properties"]?[key] != value {
                lines.append("\(uuid).\(key): replica \(mine["properties"]?[key].map { "\($0)" } ?? "nil") server \(value)")
            }
            for (key, value) in mine["properties"]?.objectValue ?? [:] where theirs["properties"]?[key] == nil && value != .null {
                lines.append("\(uuid).\(key): replica \(value) server has none")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func randomEdit(_ board: Board, scope: Scope, random: inout SplitMix64) {
        let cards = board.cards
        switch random.next() % 9 {
        case 0: board.title = "t\(random.next() % 5)"
        case 1: board.score = Int(random.next() % 100)
        case 2, 3:
            let card = Card()
            card.text = "c\(random.next() % 100)"
            board.cards.insert(card, at: Int(random.next() % UInt64(cards.count + 1)))
        case 4:
            guard !cards.isEmpty else { return }
            board.cards.remove(at: Int(random.next() % UInt64(cards.count)))
        case 5:
            guard cards.count > 1 else { return }
            var moved = cards
            let card = moved.remove(at: Int(random.next() % UInt64(moved.count)))
            moved.insert(card, at: Int(random.next() % UInt64(moved.count + 1)))
            board.cards = moved
        case 6:
            guard !cards.isEmpty else { return }
            cards[Int(random.next() % UInt64(cards.count))].votes += 1
        case 7:
            board.pinned = cards.isEmpty || random.next() % 3 == 0 ? nil : cards[Int(random.next() % UInt64(cards.count))]
        default:
            scope.modifyAtomically {
                board.score += 1
                if let card = cards.first { card.text = "atomic\(random.next() % 10)" }
            }
        }
    }
}

/// A connector that forwards to a server that can be swapped (or removed: connects fail).
final class RoutingConnector: SyncConnector {
    private let target: SanitizerVisibleMutex<(any SyncConnector)?>

    init(_ target: any SyncConnector) { self.target = SanitizerVisibleMutex(target) }

    func route(to connector: (any SyncConnector)?) { target.withLock { $0 = connector } }

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        guard let connector = target.withLock({ $0 }) else { throw .transport("server down") }
        return try await connector.connect(headers: headers)
    }
}

