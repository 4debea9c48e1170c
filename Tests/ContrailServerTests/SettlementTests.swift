import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Change sets settle truthfully: one the server will not take is refused with a typed reason and
/// the queue goes on (issue 23, deliverable 4); one whose insert or move the merge dropped is
/// partially reverted, with the drops listed (deliverable 3).
@MainActor
@Suite struct SettlementTests {
    let clock = TestClock()

    func makeServer(_ configure: (inout ServerOptions) -> Void = { _ in }) throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.log = nil
        configure(&options)
        return try ContrailServer(options: options)
    }

    func makeReplica(_ connector: any SyncConnector) async throws -> (Client, Scope, Board) {
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, connector: connector, options: testOptions(clock: clock))
        return (client, scope, board)
    }

    // MARK: - Deliverable 4: no change set wedges the queue

    @Test func twentyMegabyteStringIsRefusedWithATypedReasonAndALaterEditSettles() async throws {
        let server = try makeServer()
        let (client, scope, board) = try await makeReplica(server.connector())
        let big = try #require(scope.modify { board.title = String(repeating: "x", count: 20 << 20) })
        let small = try #require(scope.modify { board.score = 5 })
        #expect(try await big.settled(timeout: .seconds(60)) == .reverted)
        guard case .messageTooLarge(let bytes, let limit)? = big.rejection else {
            Issue.record("expected messageTooLarge, got \(String(describing: big.rejection))")
            return
        }
        #expect(bytes > 20 << 20 && limit == 16 << 20)
        #expect(board.title == "", "the refused edit is reverted locally")
        #expect(try await small.settled(timeout: .seconds(60)) == .completed, "the change set after it goes on")
        #expect(small.rejection == nil)
        // Positive control: a large string under the limit goes through, and the server has it.
        let fine = try #require(scope.modify { board.title = String(repeating: "y", count: 1 << 20) })
        #expect(try await fine.settled(timeout: .seconds(60)) == .completed)
        let fresh = try await makeReplica(server.connector())
        #expect(fresh.2.title.utf8.count == 1 << 20 && fresh.2.score == 5)
        #expect(client.lastError == nil, "nothing closed the connection")
        await client.close(); await fresh.0.close(); await server.stop()
    }

    @Test func escapesCountTowardsTheMessageLimit() async throws {
        // 40,000 quotes are 40,000 bytes of UTF-8 but 80,000 once escaped: over a 64 KiB limit.
        let server = try makeServer { $0.maxMessageBytes = 64 << 10 }
        let (client, scope, board) = try await makeReplica(server.connector())
        let over = try #require(scope.modify { board.title = String(repeating: "\"", count: 40_000) })
        #expect(try await over.settled(timeout: .seconds(30)) == .reverted)
        guard case .messageTooLarge(let bytes, 65_536)? = over.rejection else {
            Issue.record("expected messageTooLarge, got \(String(describing: over.rejection))")
            return
        }
        #expect(bytes > 80_000 && bytes < 80_400, "the exact length, escapes included")
        // Positive control: 20,000 quotes (40,000 bytes escaped) go through.
        let under = try #require(scope.modify { board.title = String(repeating: "\"", count: 20_000) })
        #expect(try await under.settled(timeout: .seconds(30)) == .completed)
        #expect(client.lastError == nil)
        await client.close(); await server.stop()
    }

    @Test func changeSetOverTheFragmentLimitIsRefusedBeforeSending() async throws {
        let server = try makeServer { $0.maxFragmentsPerMessage = 3 }
        let (client, scope, board) = try await makeReplica(server.connector())
        let tooMany = try #require(scope.modify {
            for index in 0..<4 { board.cards.append(Card()); board.cards[index].text = "\(index)" }
        })
        let within = try #require(scope.modify { board.cards.append(Card()); board.title = "two" })
        #expect(try await tooMany.settled(timeout: .seconds(30)) == .reverted)
        #expect(tooMany.rejection == .tooManyFragments(count: 5, limit: 3))
        #expect(try await within.settled(timeout: .seconds(30)) == .completed, "positive control: 2 fragments pass")
        #expect(board.cards.count == 1 && board.title == "two")
        await client.close(); await server.stop()
    }

    /// A null hole in an array (NaN in `[Double]`) is Contrail's wire rule (Protocol §3); a
    /// Jetstream server (no extensions) would drop the frame without a reply, so the client refuses
    /// the change set with the reason instead. Positive controls: a hole-free array goes to the
    /// Jetstream server, and the holed one to a Contrail server.
    @Test(arguments: [false, true])
    func arrayHolesAreRefusedBeforeSendingOnlyToAJetstreamServer(contrailServer: Bool) async throws {
        ModelRegistry.register(ReadingsBoard.self)
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let (client, session, peer) = try await harness.connect(connector, extensions: contrailServer ? ["ScopeDetach"] : [])
        let scope = Scope(name: "Gauge")
        let gauge = ReadingsBoard()
        scope.root = gauge
        try await harness.fetch(scope, session: session, peer: peer, fragments: [
            SyncFragment(kind: .change, uuid: harness.rootUUID, className: "ReadingsBoard", properties: ["readings": [1]]),
        ])
        let holed = try #require(scope.modify { gauge.readings = [1.5, .nan] })
        if !contrailServer {
            #expect(try await holed.settled(timeout: .seconds(30)) == .reverted)
            #expect(holed.rejection == .unsupportedByJetstream(reason: "Property 'readings': not all array value types match"))
            #expect(gauge.readings == [1])
        }
        let plain = try #require(scope.modify { gauge.readings = [2.5, 3.5] })
        var sent: [[String: JSON]] = []
        while sent.count < (contrailServer ? 2 : 1), case .scopeSync(let sync)? = await peer.nextNonPing() {
            sent.append(sync.fragments[0].properties)
            await peer.send(.scopeSyncReply(ScopeSyncReply(index: 2 + sent.count, replyTo: sync.index, fragmentReplies: [.accepted])))
        }
        #expect(sent == (contrailServer ? [["readings": [1.5, .null]], ["readings": [2.5, 3.5]]] : [["readings": [2.5, 3.5]]]))
        #expect(try await plain.settled(timeout: .seconds(30)) == .completed)
        if contrailServer {
            #expect(try await holed.settled(timeout: .seconds(30)) == .completed)
        }
        #expect(gauge.readings == [2.5, 3.5])
        await client.close()
    }

    @Test func serverRefusalCarriesItsErrorAndAcceptanceCarriesNone() async throws {
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let (client, session, peer) = try await harness.connect(connector)
        let (scope, board) = harness.makeScope()
        try await harness.fetch(scope, session: session, peer: peer)
        let refused = try #require(scope.modify { board.score = 1 })
        let accepted = try #require(scope.modify { board.title = "kept" })
        let error = WireErrorBody.limitExceeded("ScopeSync has 1 fragments, over the limit of 0")
        guard case .scopeSync(let first)? = await peer.nextNonPing(), case .scopeSync(let second)? = await peer.nextNonPing() else {
            Issue.record("expected two ScopeSyncs")
            return
        }
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: first.index, fragmentReplies: [.rejected(error)])),
                        .scopeSyncReply(ScopeSyncReply(index: 4, replyTo: second.index, fragmentReplies: [.accepted])))
        #expect(try await refused.settled(timeout: .seconds(30)) == .reverted)
        #expect(refused.rejection == .refusedByServer(error))
        #expect(try await accepted.settled(timeout: .seconds(30)) == .completed)
        #expect(accepted.rejection == nil && accepted.drops.isEmpty)
        #expect(board.score == 7 && board.title == "kept")
        await client.close()
    }

    // MARK: - Deliverable 3: truthful settlement

    /// A and B hold cards [c1, c2, c3]; B removes `removed` while A, not yet knowing it, moves `moved`
    /// to the end. Returns A's change set once settled, and both replicas.
    func concurrentMoveAndRemoval(moved: Int, removed: Int) async throws -> (ChangeSet, [(Client, Scope, Board)], ContrailServer) {
        let server = try makeServer()
        let a = try await makeReplica(server.connector())
        let b = try await makeReplica(server.connector())
        let cards = (0..<3).map { index in let card = Card(); card.text = "c\(index)"; return card }
        let seeded = try #require(a.1.modify { a.2.cards = cards })
        #expect(try await seeded.settled(timeout: .seconds(30)) == .completed)
        #expect(await eventually(.seconds(30)) { b.2.cards.count == 3 })
        let session = try #require(a.0.session)
        session.pauseIncoming()
        let removal = try #require(b.1.modify { b.2.cards.remove(at: removed) })
        #expect(try await removal.settled(timeout: .seconds(30)) == .completed)
        let move = try #require(a.1.modify { a.2.cards.append(a.2.cards.remove(at: moved)) })
        #expect(await eventually(.seconds(30)) { session.heldIncomingCount >= 2 }, "B's broadcast and A's reply arrived")
        session.resumeIncoming()
        _ = try await move.settled(timeout: .seconds(30))
        return (move, [a, b], server)
    }

    @Test func moveDroppedByAConcurrentRemovalSettlesPartiallyRevertedWithTheDrop() async throws {
        let (move, replicas, server) = try await concurrentMoveAndRemoval(moved: 0, removed: 0)
        #expect(move.state == .partiallyReverted)
        #expect(move.drops.map(\.property) == ["cards"] && move.drops.map(\.reason) == [.removedConcurrently])
        #expect(move.drops.first?.object == replicas[0].2.uuid)
        #expect(move.rejection == nil)
        #expect(await eventually(.seconds(30)) { replicas.allSatisfy { $0.2.cards.map(\.text) == ["c1", "c2"] } })
        for replica in replicas { await replica.0.close() }
        await server.stop()
    }

    @Test func moveOfAnElementNobodyRemovedCompletes() async throws {
        // Positive control: B removes c1 while A moves c0; the merge keeps the move.
        let (move, replicas, server) = try await concurrentMoveAndRemoval(moved: 0, removed: 1)
        #expect(move.state == .completed && move.drops.isEmpty)
        #expect(await eventually(.seconds(30)) { replicas.allSatisfy { $0.2.cards.map(\.text) == ["c2", "c0"] } })
        for replica in replicas { await replica.0.close() }
        await server.stop()
    }

    @Test func placedElementsAreTheInsertsAndMovesOfAnEdit() {
        let (a, b, c, d) = (UUID(), UUID(), UUID(), UUID())
        #expect(CollectionMerge.placed(base: [a, b, c], new: [b, c, a]) == [a])
        #expect(CollectionMerge.placed(base: [a, b], new: [a, d, b]) == [d])
        #expect(CollectionMerge.placed(base: [a, b, c], new: [a, c]).isEmpty, "a removal places nothing")
        #expect(CollectionMerge.placed(base: [a, b], new: [a, b]).isEmpty)
        #expect(Set(CollectionMerge.placed(base: [], new: [a, b])) == [a, b])
        // Whatever the merge leaves out of `placed` is a drop; with nothing removed concurrently, none.
        for _ in 0..<200 {
            let base = [a, b, c, d].shuffled().prefix(Int.random(in: 0...4))
            let new = Array(([a, b, c, d].shuffled()).prefix(Int.random(in: 0...4)))
            let merged = Set(CollectionMerge.merge(base: Array(base), new: new, current: Array(base)))
            #expect(CollectionMerge.placed(base: Array(base), new: new).allSatisfy(merged.contains))
        }
    }

    /// A reply naming a merged `cards` without the card the change set inserted: a drop, unless the
    /// reply answers a repeated change set (its values are current ones, not its merge's result).
    @Test(arguments: [false, true])
    func aRepeatedChangeSetsAnswerIsNotADrop(repeated: Bool) async throws {
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let (client, session, peer) = try await harness.connect(connector)
        let (scope, board) = harness.makeScope()
        try await harness.fetch(scope, session: session, peer: peer)
        let insert = try #require(scope.modify { board.cards.append(Card()) })
        guard case .scopeSync(let sync)? = await peer.nextNonPing() else { Issue.record("expected ScopeSync"); return }
        let replies = sync.fragments.map { fragment in
            fragment.kind == .change ? FragmentReply(error: nil, modifications: ["cards": .array([])]) : FragmentReply.accepted
        }
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: replies, repeated: repeated)))
        let state = try await insert.settled(timeout: .seconds(30))
        #expect(state == (repeated ? .completed : .partiallyReverted))
        #expect(insert.drops.count == (repeated ? 0 : 1))
        #expect(board.cards.isEmpty, "the server's value either way")
        await client.close()
    }

    @Test func limitsAdvertisedBySessionCreateReplyRoundTrip() throws {
        let limits = SessionLimits(maxMessageBytes: 1000, maxFragmentsPerMessage: 3)
        let reply = SessionCreateReply(sessionToken: "t", extensions: ["ScopeDetach"], limits: limits)
        #expect(try SessionCreateReply(json: reply.json).limits == limits)
        // An original server's reply has none; hostile values are ignored, never trusted.
        #expect(try SessionCreateReply(json: SessionCreateReply(sessionToken: "t").json).limits == nil)
        let hostile: JSON = ["type": "SessionCreateReply", "index": 0, "sessionToken": "t",
                             "limits": ["maxMessageBytes": -5, "maxFragmentsPerMessage": "many"]]
        #expect(try SessionCreateReply(json: hostile).limits == nil)
    }
}

extension ClientLifecycleStateTests {
    /// Resumes a machine after a close on transport `id` (backoff timer `id + 1`, transport `id + 2`),
    /// healthy for long enough when `healthy`; returns the close's actions (the error it recorded,
    /// if any, and the backoff it started).
    static func closeAndResume(_ machine: inout Machine, id: Int, reason: TransportClosed, healthy: Bool) -> [String] {
        let actions = spell(machine.handle(.connectionClosed(id: id, reason)))
        _ = machine.handle(.backoffElapsed(timer: id + 1))
        _ = machine.handle(.transportOpened(id: id + 2, FakeConnection("c\(id + 2)")))
        if healthy { _ = machine.handle(.sessionHealthy(id: id + 2)) }
        return actions.filter { !$0.hasPrefix("lost") }
    }

    @Test func theSameCloseAgainAndAgainIsRecordedAndBacksOff() {
        var (machine, _) = connected()
        let tooBig = TransportClosed(code: 1009, reason: "message too big")
        let recorded = "record(\(SyncError.closedByServer(code: 1009, reason: "message too big")))"
        #expect(Self.closeAndResume(&machine, id: 1, reason: tooBig, healthy: false) == ["backoff(timer 2, attempt 0)"])
        #expect(Self.closeAndResume(&machine, id: 3, reason: tooBig, healthy: false) == [recorded, "backoff(timer 4, attempt 1)"])
        #expect(Self.closeAndResume(&machine, id: 5, reason: tooBig, healthy: false) == [recorded, "backoff(timer 6, attempt 2)"])
        #expect(machine.status == .online)
        // Positive controls: a healthy spell starts over, and so does a keep-alive interval of calm
        // for the record (the backoff stands until the connection is healthy).
        #expect(Self.closeAndResume(&machine, id: 7, reason: tooBig, healthy: true) == [recorded, "backoff(timer 8, attempt 3)"])
        #expect(Self.closeAndResume(&machine, id: 9, reason: tooBig, healthy: false) == ["backoff(timer 10, attempt 0)"])
        _ = machine.handle(.keepAliveTick)
        #expect(Self.closeAndResume(&machine, id: 11, reason: tooBig, healthy: false) == ["backoff(timer 12, attempt 1)"])
        // A dropped connection (no close code) is not a repeated refusal.
        let reset = TransportClosed(code: nil, reason: "reset")
        #expect(Self.closeAndResume(&machine, id: 13, reason: reset, healthy: false) == ["backoff(timer 14, attempt 2)"])
        #expect(Self.closeAndResume(&machine, id: 15, reason: reset, healthy: false) == ["backoff(timer 16, attempt 3)"])
    }
}

/// A model with a number array, for the array-hole refusal.
final class ReadingsBoard: ModelObject {
    @Property var readings: [Double] = []
}
