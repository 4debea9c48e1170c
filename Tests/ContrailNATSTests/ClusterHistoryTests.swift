import Contrail
import ContrailNATS
@testable import ContrailServer
import ContrailTestSupport
import ContrailWire
import Foundation
import Synchronization
import Testing

/// History in a cluster (Protocol §8.26): two servers over one real `nats-server -js`, change sets
/// through both, every point of the history equal on both servers and equal to the state the
/// scope had then, across snapshots and trims of the subject; a restore reaching a client of the
/// other server; revisions marked on one server (or by a client) and read on the other.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterHistoryTests {
    /// A wall clock the test moves (the history's times and the retention's cutoff).
    final class WallClock: Sendable {
        private let date = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { date.withLock { $0 } }
        func advance(days: Double) { date.withLock { $0.addTimeInterval(days * 86_400) } }
    }

    func makeServer(_ nats: NATSServerProcess, retention: Duration?, clock: WallClock) throws -> ContrailServer {
        try clusterServer(nats) { options, cluster in
            options.historyRetention = retention
            options.wallClock = { clock.now }
            cluster.snapshotEvery = 3
        }
    }

    /// A deck replica of `server`, patient with a loaded machine (``ClusterServerTests``'s).
    func makeReplica(_ server: ContrailServer) async throws -> (Client, Scope, Deck) {
        try await ClusterServerTests().makeReplica(server)
    }

    /// One edit through `replica`'s server, synced and seen by `other`; returns the scope's state
    /// on the writing server once both servers have it, keyed by the change set's number.
    func edit(_ replica: (Client, Scope, Deck), _ other: (Client, Scope, Deck), score: Int, servers: [ContrailServer]) async throws -> (Int, JSON) {
        replica.2.score = score
        replica.2.title = "t\(score)"
        try await replica.0.session?.sync(replica.1)
        #expect(await eventually(.seconds(60)) { other.2.score == score }, "the other server's client sees \(score)")
        var states: Set<JSON> = []
        #expect(await eventually(.seconds(60)) {
            states = []
            for server in servers { states.insert(await server.state(ofScope: "Deck") ?? .null) }
            return states.count == 1
        })
        let latest = try await servers[0].history(of: "Deck").latest
        return (latest, try #require(states.first))
    }

    @Test func historyAndEveryPointAgreeOnBothServersAcrossTrimsWithARetention() async throws {
        let nats = try await NATSServerProcess.start()
        let clock = WallClock()
        let a = try makeServer(nats, retention: .seconds(30 * 86_400), clock: clock)
        let b = try makeServer(nats, retention: .seconds(30 * 86_400), clock: clock)
        let onA = try await makeReplica(a)
        let onB = try await makeReplica(b)
        var states: [Int: JSON] = [:]
        var beforeTheJump = 0
        // Snapshots every 3 own change sets; the clock moves past the retention halfway, so the
        // snapshots taken before become old and the subject is trimmed behind the newest of them.
        for round in 1...16 {
            if round == 9 {
                beforeTheJump = states.keys.max() ?? 0
                clock.advance(days: 31)
            }
            let (sequence, state) = try await edit(round % 2 == 0 ? onA : onB, round % 2 == 0 ? onB : onA, score: round, servers: [a, b])
            states[sequence] = state
        }
        let historyA = try await a.history(of: "Deck")
        let historyB = try await b.history(of: "Deck")
        #expect(historyA == historyB, "both servers read the same history")
        #expect(historyA.latest == states.keys.max())
        #expect(historyA.oldest > 0, "the subject was trimmed behind an old snapshot (oldest \(historyA.oldest))")
        #expect(historyA.oldest <= beforeTheJump, "the change sets younger than the retention are kept")
        #expect(historyA.entries.map(\.sequence) == Array(historyA.oldest + 1 ..< historyA.latest + 1), "gap-free")
        #expect(historyA.entries.allSatisfy { $0.user == "" && $0.time != nil }, "each entry has its user and time")
        #expect(historyA.entries.last?.time == clock.now)
        // Every point kept, on both servers, is the state the scope had then.
        for sequence in historyA.oldest...historyA.latest {
            guard let expected = states[sequence] else { continue }
            #expect(try await a.scopeState("Deck", at: .sequence(sequence)).state == expected, "at \(sequence) on a")
            #expect(try await b.scopeState("Deck", at: .sequence(sequence)).state == expected, "at \(sequence) on b")
        }
        #expect(states.keys.filter { $0 >= historyA.oldest }.count >= 8, "the points checked")
        // Negatives, with the control above: past the end, before the oldest kept.
        await #expect(throws: AdminError.self) { try await a.scopeState("Deck", at: .sequence(historyA.latest + 1)) }
        if historyA.oldest > 1 {
            await #expect(throws: AdminError.self) { try await b.scopeState("Deck", at: .sequence(historyA.oldest - 1)) }
        }

        // A restore on a reaches b's client as one change set, and both servers agree.
        let target = historyA.latest - 2
        let restored = try await a.restoreScope("Deck", to: .sequence(target))
        #expect(restored.sequence == target && restored.fragments > 0)
        let root = try #require(states[target]?["root"]?.stringValue)
        let expectedScore = states[target]?["objects"]?[root]?["properties"]?["score"]
        #expect(await eventually(.seconds(60)) { JSON.int(Int64(onB.2.score)) == expectedScore }, "b's client sees the restore")
        #expect(await eventually(.seconds(60)) { await b.state(ofScope: "Deck") == states[target] })
        #expect(await a.state(ofScope: "Deck") == states[target])
        #expect(try await b.history(of: "Deck").latest == historyA.latest + 1, "the restore is one new change set")

        // A revision marked on a is read on b; the label is taken once in the cluster.
        let revision = try await a.markRevision("v1", scope: "Deck", user: "ada")
        #expect(revision.sequence == historyA.latest + 1)
        #expect(try await b.history(of: "Deck").revisions.map(\.label) == ["v1"])
        #expect(try await b.scopeState("Deck", at: .revision("v1")).state == states[target])
        await #expect(throws: AdminError.revisionExists("v1")) { try await b.markRevision("v1", scope: "Deck") }
        await #expect(throws: AdminError.unknownRevision("v9")) { try await b.scopeState("Deck", at: .revision("v9")) }
        // A client on b marks one after its own edit; a reads it.
        onB.2.title = "marked by b"
        let marked = try await onB.1.markRevision("v2")
        #expect(try await a.history(of: "Deck").revisions.map(\.label) == ["v1", "v2"])
        #expect(try await a.scopeState("Deck", at: .revision("v2")).state["objects"]?[root]?["properties"]?["title"] == "marked by b")
        #expect(marked == revision.sequence + 1)
        await #expect(throws: SyncError.self) { try await onA.1.markRevision("v2") }

        // A third server that never held the scope reads the same history and marks on it; a name
        // the cluster never wrote is unknown, and a mark does not create it.
        let c = try makeServer(nats, retention: .seconds(30 * 86_400), clock: clock)
        #expect(try await c.history(of: "Deck") == (try await a.history(of: "Deck")))
        #expect(try await c.markRevision("v3", scope: "Deck").sequence == marked)
        await #expect(throws: AdminError.unknownScope("Nowhere")) { try await c.markRevision("v1", scope: "Nowhere") }
        await #expect(throws: AdminError.unknownScope("Nowhere")) { try await c.history(of: "Nowhere") }
        await c.stop()

        await onA.0.close(); await onB.0.close()
        await a.stop(); await b.stop(); await nats.stop()
    }

    /// A mark sent right behind change sets (as the browser client sends them, without waiting
    /// for the replies) names the state with them. (The server waits for the change sets queued or
    /// in flight at the mark; this test does not force a publish to be in flight at that moment, so
    /// it checks the outcome, not that wait: it passed with the wait removed.)
    @Test func aMarkRightBehindAQueuedChangeSetIncludesIt() async throws {
        let nats = try await NATSServerProcess.start()
        let clock = WallClock()
        let a = try makeServer(nats, retention: .seconds(86_400), clock: clock)  // every point stays readable
        let replica = try await makeReplica(a)
        _ = try await edit(replica, replica, score: 1, servers: [a])
        let root = try #require(await a.state(ofScope: "Deck")?["root"]?.stringValue.flatMap(UUID.init(wireString:)))
        guard case .scope(let scope) = a.core.holdScope(named: "Deck") else { throw TestFailure("no scope") }
        defer { a.core.releaseScope(named: "Deck") }
        let outbox = SessionOutbox(limitBytes: 1 << 20) { _ in }
        var index = 0
        for round in 1...5 {
            // Several change sets, so some wait behind the publish in flight (group commit).
            for step in 1...20 {
                index += 1
                let title = step == 20 ? "queued \(round)" : "step \(step)"
                let change = SyncFragment(kind: .change, uuid: root, className: "Deck", properties: ["title": .string(title)])
                await scope.sync(ScopeSync(index: index, scopeIndex: 0, fragments: [change], atomic: false, changeSetID: UUID()),
                                 from: outbox, identity: .unrestricted, received: nil)
            }
            let revision = try await scope.markRevision("r\(round)", user: "")
            let marked = try await a.scopeState("Deck", at: .revision("r\(round)")).state
            #expect(marked["objects"]?[root.wireString]?["properties"]?["title"] == .string("queued \(round)"), "r\(round) at \(revision.sequence)")
        }
        // Control: a mark with nothing queued names the latest change set.
        #expect(try await scope.markRevision("last", user: "").sequence == (try await a.history(of: "Deck").latest))
        await replica.0.close()
        await a.stop(); await nats.stop()
    }

    /// Without a retention the history is what the subject holds after the latest snapshot: the
    /// points before it are refused, the ones after it are the states the scope had.
    @Test func withoutARetentionTheHistoryStartsAtTheLatestSnapshot() async throws {
        let nats = try await NATSServerProcess.start()
        let clock = WallClock()
        let a = try makeServer(nats, retention: nil, clock: clock)
        let b = try makeServer(nats, retention: nil, clock: clock)
        let onA = try await makeReplica(a)
        let onB = try await makeReplica(b)
        var states: [Int: JSON] = [:]
        // Before any snapshot the genesis is kept: every point from 0.
        let (first, firstState) = try await edit(onA, onB, score: 1, servers: [a, b])
        states[first] = firstState
        #expect(try await b.history(of: "Deck").oldest == 0)
        #expect(try await b.scopeState("Deck", at: .sequence(first)).state == firstState)
        for round in 2...13 {
            let (sequence, state) = try await edit(onA, onB, score: round, servers: [a, b])
            states[sequence] = state
        }
        let history = try await b.history(of: "Deck")
        #expect(history == (try await a.history(of: "Deck")))
        #expect(history.oldest > first, "trimmed behind the snapshots (oldest \(history.oldest))")
        #expect(history.entries.map(\.sequence) == Array(history.oldest + 1 ..< history.latest + 1))
        for sequence in history.oldest...history.latest {
            #expect(try await a.scopeState("Deck", at: .sequence(sequence)).state == states[sequence], "at \(sequence)")
        }
        await #expect(throws: AdminError.self) { try await a.scopeState("Deck", at: .sequence(first)) }
        await onA.0.close(); await onB.0.close()
        await a.stop(); await b.stop(); await nats.stop()
    }
}

/// `contrail scope` against two `contrail serve --nats --history` children: a revision marked
/// through one server's admin API is listed by the other, whose `at` prints the state at it.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterHistoryCLITests {
    /// Runs `contrail scope ARGUMENTS` with the admin token; its status and output.
    func scope(_ arguments: [String]) async throws -> (status: ClusterHistoryCLITests.Status, output: String) {
        let child = try ChildProcess(ServeProcess.binary, ["scope"] + arguments, environment: ["CONTRAIL_ADMIN_TOKEN": "secret-admin"])
        #expect(await child.waitForExit(timeout: .seconds(120)))
        _ = await child.waitForOutputToEnd(timeout: .seconds(30))
        return (child.termination == .exited(0) ? .succeeded : .failed, child.text)
    }

    enum Status { case succeeded, failed }

    @Test func theCLIMarksOnOneServerAndReadsOnTheOther() async throws {
        let nats = try await NATSServerProcess.start()
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-cluster-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appending(path: "token").path(percentEncoded: false)
        try Data("secret-admin\n".utf8).write(to: URL(filePath: tokenFile))
        let arguments = ["--history", "30d", "--token-file", tokenFile]
        let one = try await ServeProcess.start(natsURL: nats.url.description, arguments: arguments)
        let two = try await ServeProcess.start(natsURL: nats.url.description, arguments: arguments)
        var options = ClientOptions()
        options.sessionParams = ["token": "secret-admin"]
        options.replyTimeout = .seconds(60)
        let scope = Scope(name: "Deck")
        let deck = Deck()
        scope.root = deck
        let client = try await Client.sync(scope, url: one.url, options: options)
        deck.title = "marked"
        try await client.session?.sync(scope)
        let first = "http://127.0.0.1:\(one.port)", second = "http://127.0.0.1:\(two.port)"

        let mark = try await self.scope(["--server", first, "mark", "Deck", "v1"])
        #expect(mark.status == .succeeded, "\(mark.output)")
        deck.title = "after"
        try await client.session?.sync(scope)
        let listed = try await self.scope(["--server", second, "--json", "history", "Deck"])
        #expect(listed.status == .succeeded, "\(listed.output)")
        let history = try #require(ScopeHistory(json: try JSON(parsing: Array(listed.output.utf8))), "\(listed.output)")
        #expect(history.revisions.map(\.label) == ["v1"])
        #expect(history.entries.count == history.latest && history.oldest == 0, "every change set from the genesis")
        let at = try await self.scope(["--server", second, "--json", "at", "Deck", "--seq", "v1"])
        #expect(at.status == .succeeded, "\(at.output)")
        let state = try JSON(parsing: Array(at.output.utf8))
        let root = try #require(state["state"]?["root"]?.stringValue)
        #expect(state["state"]?["objects"]?[root]?["properties"]?["title"] == "marked")
        // Negative, with the control above: the label is taken, also through the other server.
        let again = try await self.scope(["--server", second, "mark", "Deck", "v1"])
        #expect(again.status == .failed && again.output.contains("v1"), "\(again.output)")

        await client.close()
        await one.kill(); await two.kill(); await nats.stop()
    }
}
