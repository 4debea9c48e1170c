import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Broadcasts with collections as edits (Protocol §8.24): a Contrail client that asks for them gets
/// edits of the value the server had before, applies them against that value, and refetches when it
/// does not hold it; original peers still get whole arrays.
@MainActor
@Suite struct CollectionBroadcastEditTests {
    let rootUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    let clock = TestClock()

    // MARK: - On the server's wire

    @Test func aSessionThatAsksGetsEditsAndAnOriginalPeerGetsTheWholeArray() async throws {
        let server = try ContrailServer(options: Wire.options())
        let sender = ServerTestClient(server: server)
        let original = ServerTestClient(server: server)
        let contrail = ServerTestClient(server: server)
        try await sender.createSession()
        try await original.createSession()
        try await contrail.createSession(params: [SyncFragment.collectionOpsParameter: true])
        let (_, state) = try await sender.fetch("S", index: 1)
        _ = try await original.fetch("S", index: 1)
        _ = try await contrail.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let items = (0..<300).map { _ in UUID() }
        let setup = [Wire.fragment("change", root, "Board", ["items": Wire.array(items.map(\.wireString))])]
            + items.map { Wire.fragment("add", $0.wireString, "Item", ["n": 1]) }
        _ = try await sender.sync(index: 2, fragments: setup)
        _ = try await original.next()
        _ = try await contrail.next()
        // An append sent the original way (the whole array with its base): the session that asked
        // gets it as an edit of the value the scope had before, the original peer as the array.
        let appended = UUID()
        let change = Wire.fragment("change", root, "Board", ["items": Wire.array((items + [appended]).map(\.wireString))],
                                   bases: ["items": items.map(\.wireString)])
        _ = try await sender.sync(index: 3, fragments: [change, Wire.fragment("add", appended.wireString, "Item", ["n": 2])])
        let whole = try await original.next()
        #expect(whole["fragments"]?[0]?["properties"]?["items"] == Wire.array((items + [appended]).map(\.wireString)))
        #expect(whole["fragments"]?[0]?["collectionOps"] == nil)
        let edited = try await contrail.next()
        #expect(edited["type"] == "ScopeSync")
        let fragment = try SyncFragment(json: try #require(edited["fragments"]?[0]))
        let edit = try #require(fragment.collectionEdits?["items"])
        #expect(fragment.properties["items"] == nil)
        #expect(edit.applied(to: items) == items + [appended])
        #expect(edited.jsonString.utf8.count < 1_000, "an append to 300 items is a few hundred bytes, not the list")
        #expect(whole.jsonString.utf8.count > 10_000, "positive control: the whole array")
        await server.stop()
    }

    // MARK: - On the client (a scripted server)

    /// Connects a client that takes edits and fetches a board holding `cards`; returns the client,
    /// scope, board and peer, and the params the client sent in its SessionCreate.
    func connect(cards: [UUID]) async throws -> (Client, Scope, Board, ScriptedPeer, [String: JSON]) {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: clock))
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        guard case .sessionCreate(let create)? = await peer.next() else { throw SyncError.closed }
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1", extensions: [SyncFragment.collectionOpsExtension])))
        try await task.value
        let session = try #require(client.session)
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let fetching = Task { try await session.fetch(scope) }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { throw SyncError.closed }
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: fetch.index, scopeIndex: 0)),
                        .scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: rootUUID, fragments: state(cards))))
        try await fetching.value
        return (client, scope, board, peer, create.params)
    }

    func state(_ cards: [UUID]) -> [SyncFragment] {
        [SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["cards": .array(cards.map { .string($0.wireString) })])]
            + cards.map { SyncFragment(kind: .add, uuid: $0, className: "Card", properties: ["text": "c"]) }
    }

    func editSync(index: Int, base: [UUID], new: [UUID], added: [UUID]) throws -> Message {
        let edit = try #require(CollectionEdit(base: base, new: new))
        var change = SyncFragment(kind: .change, uuid: rootUUID, className: "Board", collectionEdits: ["cards": edit])
        change.properties = [:]
        return .scopeSync(ScopeSync(index: index, scopeIndex: 0,
                                    fragments: [change] + added.map { SyncFragment(kind: .add, uuid: $0, className: "Card", properties: ["text": "new"]) }))
    }

    @Test func aBroadcastEditIsAppliedToTheValueTheServerHad() async throws {
        let cards = (0..<5).map { _ in UUID() }
        let (client, _, board, peer, params) = try await connect(cards: cards)
        #expect(params[SyncFragment.collectionOpsParameter] == true, "the client asks for edits")
        let inserted = UUID()
        let new = [cards[0], inserted] + cards[1...].filter { $0 != cards[3] }
        await peer.send(try editSync(index: 3, base: cards, new: new, added: [inserted]))
        #expect(await eventually { board.cards.map(\.uuid) == new })
        // Nothing is fetched again (the edit fitted): the next message is the keep-alive.
        await ChangeDelivery.main.drain()
        await clock.fireKeepAlive()
        let next = await peer.next()
        guard case .ping? = next else {
            Issue.record("expected only a keep-alive, got \(String(describing: next))")
            return
        }
        await client.close()
    }

    @Test func aBroadcastEditMeetsAPendingLocalEditAsTheArrayWould() async throws {
        let cards = (0..<4).map { _ in UUID() }
        let (client, scope, board, peer, _) = try await connect(cards: cards)
        // A local append is pending (sent, not answered): the property shows it on top of the server's value.
        let local = Card()
        board.cards.append(local)
        let mine = try #require(scope.flush())
        guard case .scopeSync(let sent)? = await peer.nextNonPing() else { throw SyncError.closed }
        // Another client removed cards[1] and inserted one at the front, on the value the server had.
        let remote = UUID()
        let new = [remote, cards[0], cards[2], cards[3]]
        await peer.send(try editSync(index: 3, base: cards, new: new, added: [remote]))
        let expected = CollectionMerge.merge(base: cards, new: cards + [local.uuid], current: new)
        #expect(await eventually { board.cards.map(\.uuid) == expected })
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: sent.index, fragmentReplies: [
            FragmentReply(modifications: ["cards": .array(expected.map { .string($0.wireString) })]), .accepted,
        ])))
        #expect(await mine.settled() == .completed)
        // The next broadcast is an edit of the merged value, which the replica now holds.
        let later = UUID()
        await peer.send(try editSync(index: 5, base: expected, new: expected + [later], added: [later]))
        #expect(await eventually { board.cards.map(\.uuid) == expected + [later] })
        await client.close()
    }

    @Test func anEditOfABaseTheReplicaDoesNotHoldIsNotAppliedAndTheScopeIsFetchedAgain() async throws {
        let cards = (0..<4).map { _ in UUID() }
        let (client, _, board, peer, _) = try await connect(cards: cards)
        // The server's value was [cards[0], cards[1]] (a broadcast was missed): the digest does not match.
        let inserted = UUID()
        await peer.send(try editSync(index: 3, base: Array(cards[..<2]), new: [cards[0], inserted, cards[1]], added: [inserted]))
        guard case .scopeFetch(let refetch)? = await peer.nextNonPing() else {
            Issue.record("expected a refetch")
            await client.close()
            return
        }
        #expect(board.cards.map(\.uuid) == cards, "nothing of the edit is applied")
        #expect(board.cards.allSatisfy { $0.scope != nil })
        // The fetched state is what the replica then holds.
        let truth = [cards[0], inserted, cards[1]]
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 4, replyTo: refetch.index, scopeIndex: 0)),
                        .scopeState(ScopeState(index: 5, scopeIndex: 0, rootUUID: rootUUID, fragments: state(truth))))
        #expect(await eventually { board.cards.map(\.uuid) == truth })
        await client.close()
    }

    // MARK: - End to end

    /// Two Contrail clients and an original-style one (whole arrays both ways) edit one collection
    /// through a server; every replica ends with the server's value, and the Contrail subscriber
    /// received edits, not arrays.
    @Test func contrailSubscribersConvergeOnEditsBesideAnOriginalStylePeer() async throws {
        ModelRegistry.register(Shelf.self, Item.self)
        let server = try ContrailServer(options: Wire.options())
        let frames = FrameLog()
        var originalStyle = ClientOptions()
        originalStyle.sendsCollectionEdits = false
        let scopes = (0..<3).map { _ in Scope(name: "shelf") }
        var clients: [Client] = []
        for (index, scope) in scopes.enumerated() {
            let shelf = Shelf()
            scope.root = shelf
            let connector: any SyncConnector = index == 1 ? frames.connector(server.connector()) : server.connector()
            clients.append(try await Client.sync(scope, connector: connector, options: index == 2 ? originalStyle : ClientOptions()))
        }
        let shelves = scopes.map { $0.root as! Shelf }
        scopes[0].modify { shelves[0].left = (0..<50).map { _ in Item() } }
        #expect(await eventually { shelves.allSatisfy { $0.left.count == 50 } })
        var random = SplitMix64(seed: 2_451)
        for round in 0..<40 {
            let which = Int(random.next() % 3)
            let shelf = shelves[which]
            scopes[which].modify {
                switch random.next() % 3 {
                case 0: shelf.left.insert(Item(), at: Int(random.next() % UInt64(shelf.left.count + 1)))
                case 1 where !shelf.left.isEmpty: shelf.left.remove(at: Int(random.next() % UInt64(shelf.left.count)))
                default: if shelf.left.count > 1 { shelf.left.swapAt(0, Int(random.next() % UInt64(shelf.left.count))) }
                }
            }
            if round % 10 == 9 { #expect(await eventually { clients.allSatisfy { $0.session?.pendingChangeSets == 0 } }) }
        }
        #expect(await eventually {
            guard clients.allSatisfy({ $0.session?.pendingChangeSets == 0 }) else { return false }
            let stored = await server.state(ofScope: "shelf")?["objects"]?[self.root(of: scopes[0])]?["properties"]?["left"]
            return shelves.allSatisfy { JSON.array($0.left.map { .string($0.uuid.wireString) }) == stored }
        })
        let received = frames.received
        #expect(received.contains { $0.contains("\"collectionOps\"") && $0.contains("ScopeSync") }, "the Contrail subscriber got edits")
        for client in clients { await client.close() }
        await server.stop()
    }

    private func root(of scope: Scope) -> String { scope.root?.uuid.wireString ?? "" }
}

/// Every frame the transports of its ``connector(_:)``s received.
final class FrameLog: Sendable {
    private let frames = SanitizerVisibleMutex<[String]>([])
    var received: [String] { frames.withLock { $0 } }

    /// `base`, with every frame its transports receive noted here.
    func connector(_ base: any SyncConnector) -> TappedConnector {
        TappedConnector(base: base) { [self] frame, direction in
            if direction == .received { frames.withLock { $0.append(frame) } }
            return true
        }
    }
}
