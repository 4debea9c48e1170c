import Contrail
import ContrailTestSupport
import Foundation
import Testing

/// The client state machine against a server scripted with raw messages over an in-memory transport.
@MainActor
@Suite struct ClientTests {
    let rootUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    /// The virtual time the test's clients wait on (`testOptions(clock:)`).
    let clock = TestClock()

    /// Connects a client and answers its handshake, listing `extensions` (none, as Jetstream does,
    /// by default); returns the client, its session and the peer.
    func connect(_ connector: ScriptedConnector, options: ClientOptions? = nil,
                 extensions: [String] = []) async throws -> (Client, Session, ScriptedPeer) {
        let client = Client(connector: connector, options: options ?? testOptions(clock: clock))
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        let create = await peer.next()
        guard case .sessionCreate(let message)? = create else {
            Issue.record("expected SessionCreate, got \(String(describing: create))")
            throw SyncError.closed
        }
        #expect(message.index == 0)
        #expect(message.version == "0.2.0")
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1", extensions: extensions)))
        try await task.value
        return (client, try #require(client.session), peer)
    }

    /// Fetches `scope` through `peer`, answering with a state of `fragments` (root first).
    func fetch(_ scope: Scope, session: Session, peer: ScriptedPeer, fetchIndex: Int = 1, serverIndex: Int = 1,
               scopeIndex: Int = 0, fragments: [SyncFragment]? = nil) async throws {
        let task = Task { try await session.fetch(scope) }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else {
            Issue.record("expected ScopeFetch")
            throw SyncError.closed
        }
        #expect(fetch.index == fetchIndex)
        #expect(fetch.name == scope.name)
        let state = fragments ?? [SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["title": "server", "score": 7])]
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: serverIndex, replyTo: fetch.index, scopeIndex: scopeIndex)),
                        .scopeState(ScopeState(index: serverIndex + 1, scopeIndex: scopeIndex, rootUUID: rootUUID, fragments: state)))
        try await task.value
    }

    func makeScope() -> (Scope, Board) {
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        return (scope, board)
    }

    /// The next keep-alive the client sends once the clock fires it, with an acknowledgement of at
    /// least `ack` (it ticks again while the acknowledgement is lower). Nil, and an issue, when
    /// anything else comes first. Messages go out in order, so this is a deterministic check that
    /// nothing else was sent; with `ack` it also proves the server's messages up to that index
    /// were processed.
    func keepAlive(_ peer: ScriptedPeer, ack: Int = 0, interval: Duration = ClientOptions().pingInterval,
                   sourceLocation: SourceLocation = #_sourceLocation) async -> Ping? {
        for _ in 0..<50 {
            await ChangeDelivery.main.drain()
            await clock.fireKeepAlive(interval: interval, sourceLocation: sourceLocation)
            let message = await peer.next()
            guard case .ping(let ping)? = message, !ping.resendMissing else {
                Issue.record("expected only a keep-alive, got \(String(describing: message))", sourceLocation: sourceLocation)
                return nil
            }
            if ping.ack >= ack { return ping }
        }
        Issue.record("no keep-alive acknowledged \(ack)", sourceLocation: sourceLocation)
        return nil
    }

    /// Whether the client sends nothing but its keep-alive (see `keepAlive`).
    func quiet(_ peer: ScriptedPeer, ack: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        await keepAlive(peer, ack: ack, sourceLocation: sourceLocation) != nil
    }

    /// The next ScopeSync the client sends.
    func nextSync(_ peer: ScriptedPeer) async throws -> ScopeSync {
        let message = await peer.nextNonPing()
        guard case .scopeSync(let sync)? = message else {
            Issue.record("expected ScopeSync, got \(String(describing: message))")
            throw SyncError.closed
        }
        return sync
    }

    @Test func handshakeSendsSessionCreateAloneAndFetchAppliesState() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        #expect(client.status == .online)
        #expect(await quiet(peer))
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        #expect(board.uuid == rootUUID)
        #expect(board.title == "server")
        #expect(board.score == 7)
        #expect(scope.isSynced)
        await client.close()
        #expect(client.status == .offline)
    }

    @Test func deniedSessionIsATypedError() async throws {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: clock))
        let task = Task { () -> SyncError? in
            do { _ = try await client.connect(); return nil } catch { return error as? SyncError }
        }
        let peer = try await connector.nextPeer()
        _ = await peer.next()
        await peer.send(.sessionCreateReply(SessionCreateReply(error: .sessionCreationDenied)))
        #expect(await task.value == .sessionDenied("Session creation denied"))
        #expect(client.status == .offline)
        #expect(client.session == nil)
    }

    @Test func deniedFetchIsATypedError() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, _) = makeScope()
        let task = Task { () -> SyncError? in
            do { try await session.fetch(scope); return nil } catch { return error as? SyncError }
        }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { Issue.record("no fetch"); return }
        let denial = WireErrorBody(message: "No such scope", type: "denied")
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: fetch.index, error: denial)))
        #expect(await task.value == .fetchFailed(denial))
        await client.close()
    }

    @Test func localChangeSetGoesOutAndCompletes() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        var statuses: [SyncStatus] = []
        session.onSyncStatus(connector) { statuses.append($0) }
        board.score = 8
        let sync = try await nextSync(peer)
        #expect(sync.index == 2)
        #expect(sync.atomic == nil)
        #expect(sync.fragments == [SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 8])])
        let changeSet = try #require(scope.history.last)
        #expect(changeSet.state == .syncing)
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: 2, fragmentReplies: [.accepted])))
        #expect(await changeSet.settled() == .completed)
        #expect(board.score == 8)
        #expect(statuses == [.syncing(pending: 1), .synced])
        await client.close()
    }

    @Test func atomicChangeSetIsSentAtomic() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        let changeSet = try #require(scope.modifyAtomically { board.score = 1; board.title = "t" })
        let sync = try await nextSync(peer)
        #expect(sync.atomic == true)
        let error = WireErrorBody.couldNotApplySyncMessage("nope")
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: [.rejected(error)])))
        #expect(await changeSet.settled() == .reverted)
        #expect(board.score == 7 && board.title == "server")
        await client.close()
    }

    @Test func rejectedChangeSetRevertsAndLaterOneIsRebased() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 1
        let first = try #require(scope.flush())
        board.score = 2
        board.title = "second"
        let second = try #require(scope.flush())
        let sync1 = try await nextSync(peer)
        let sync2 = try await nextSync(peer)
        let rejected = FragmentReply.rejected(WireErrorBody(message: "ModelObject not found"))
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync1.index, fragmentReplies: [rejected])))
        #expect(await first.settled() == .reverted)
        #expect(board.score == 2, "a later pending change set keeps its value")
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: sync2.index, fragmentReplies: [rejected])))
        #expect(await second.settled() == .reverted)
        #expect(board.score == 7, "rebased onto the first set's original: back to before both")
        #expect(board.title == "server")
        await client.close()
    }

    @Test func partiallyRevertedChangeSetRevertsOnlyRejectedFragments() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        let card = UUID()
        try await fetch(scope, session: session, peer: peer, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["cards": .array([.string(card.wireString)])]),
            SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["text": "a"]),
        ])
        let cardObject = try #require(board.cards.first)
        let changeSet = try #require(scope.modify { board.score = 3; cardObject.text = "b" })
        let sync = try await nextSync(peer)
        #expect(sync.fragments.count == 2)
        let replies = sync.fragments.map { $0.uuid == card ? FragmentReply.rejected(WireErrorBody(message: "no")) : .accepted }
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: replies)))
        #expect(await changeSet.settled() == .partiallyReverted)
        #expect(board.score == 3)
        #expect(cardObject.text == "a")
        await client.close()
    }

    @Test func remoteValueNeverOverwritesAPendingKeyAndBecomesItsOriginal() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 1
        let mine = try #require(scope.flush())
        let sync = try await nextSync(peer)
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 50, "title": "remote"]),
        ])))
        #expect(await eventually { board.title == "remote" })
        #expect(board.score == 1)
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: sync.index, fragmentReplies: [.rejected(WireErrorBody(message: "no"))])))
        #expect(await mine.settled() == .reverted)
        #expect(board.score == 50)
        await client.close()
    }

    @Test func remoteInsertIntoAPendingCollectionIsMergedLocally() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        let local = Card()
        board.cards.append(local)
        let mine = try #require(scope.flush())
        let sync = try await nextSync(peer)
        let remote = UUID()
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["cards": .array([.string(remote.wireString)])]),
            SyncFragment(kind: .add, uuid: remote, className: "Card", properties: ["text": "theirs"]),
        ])))
        #expect(await eventually { board.cards.count == 2 })
        #expect(Set(board.cards.map(\.uuid)) == [local.uuid, remote])
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: sync.index, fragmentReplies: [.accepted, .accepted])))
        #expect(await mine.settled() == .completed)
        #expect(board.cards.count == 2)
        await client.close()
    }

    /// A change set made on a value a later remote change replaced, then refused, goes back to what
    /// the server holds, not to what it was made on (fuzz seed 4762). Change set A appends y; a
    /// remote adds x; B moves x from `cards` to `pinned`; a remote removes x (the server deletes
    /// it); A completes as sent; B is refused. With the removal (`removedRemotely`), `cards` must end
    /// as the server's [y]; the control without it shows the revert restoring x, as the server
    /// still holds it.
    @Test(arguments: [true, false])
    func refusedChangeSetAfterACompletedOneRevertsToTheServersValue(removedRemotely: Bool) async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        let y = Card()
        let first = try #require(scope.modify { board.cards.append(y) })
        let sync1 = try await nextSync(peer)
        let x = UUID()
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["cards": .array([.string(x.wireString)])]),
            SyncFragment(kind: .add, uuid: x, className: "Card", properties: ["text": "x"]),
        ])))
        #expect(await eventually { board.cards.map(\.uuid) == [x, y.uuid] })
        let xCard = try #require(board.cards.first)
        let second = try #require(scope.modify { board.cards.removeFirst(); board.pinned = xCard })
        let sync2 = try await nextSync(peer)
        var index = 4
        if removedRemotely {
            await peer.send(.scopeSync(ScopeSync(index: index, scopeIndex: 0, fragments: [
                SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["cards": .array([])]),
            ])))
            index += 1
            #expect(await eventually { board.cards.map(\.uuid) == [y.uuid] && board.pinned === xCard })
        }
        // A as sent: the server's merge kept [y] (after the removal) or answers [x, y] (without it).
        let merged: [String: JSON]? = removedRemotely ? nil : ["cards": .array([.string(x.wireString), .string(y.uuid.wireString)])]
        let replies1 = sync1.fragments.map { $0.kind == .change ? FragmentReply(modifications: merged) : .accepted }
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: index, replyTo: sync1.index, fragmentReplies: replies1)))
        #expect(await first.settled() == .completed)
        let refused = sync2.fragments.map { _ in FragmentReply.rejected(WireErrorBody(message: "No such ModelObjects")) }
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: index + 1, replyTo: sync2.index, fragmentReplies: refused)))
        #expect(await second.settled() == .reverted)
        #expect(board.pinned == nil)
        #expect(board.cards.map(\.uuid) == (removedRemotely ? [y.uuid] : [x, y.uuid]))
        await client.close()
    }

    /// A shared counter's change set answered as a repeat (§8.11: its first send was applied, the
    /// reply lost in a restart) takes the server's total, even when that equals the total it sent:
    /// the replica, which meanwhile received a state that already counts the delta, shows that state
    /// plus the pending delta (fuzz `--shared-values` seed 1280 ended 2 below the server). Control:
    /// the first answer to the same change set, after a state from before it, agrees either way.
    @Test(arguments: [true, false])
    func aRepeatedCounterReplySetsTheServersTotal(repeated: Bool) async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector, extensions: ["SharedCounter"])
        let scope = Scope(name: "Memo")
        let memo = Memo()
        scope.root = memo
        try await fetch(scope, session: session, peer: peer, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Memo", properties: ["likes": 1]),
        ])
        let down = try #require(scope.modify { memo.likes.add(-2) })
        let sync = try await nextSync(peer)
        #expect(memo.likes.value == -1)
        // The server's total: already counting the delta (after a restart), or from before it.
        let remote: JSON = repeated ? -1 : 1
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Memo", properties: ["likes": remote]),
        ])))
        #expect(await eventually { memo.likes.value == (repeated ? -3 : -1) }, "the pending delta on the state")
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: sync.index,
                                                       fragmentReplies: [FragmentReply(modifications: ["likes": -1])],
                                                       repeated: repeated)))
        #expect(await down.settled() == .completed)
        #expect(memo.likes.value == -1, "the server's total")
        await client.close()
    }

    @Test func modificationsInTheReplyAreApplied() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.title = "mine"
        let mine = try #require(scope.flush())
        let sync = try await nextSync(peer)
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index,
                                                       fragmentReplies: [FragmentReply(modifications: ["title": "server's"])])))
        #expect(await mine.settled() == .completed)
        #expect(board.title == "server's")
        await client.close()
    }

    @Test func reconnectResumesWithTokenAndHoldsNewMessagesUntilResend() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 1
        let first = try #require(scope.flush())
        let sync1 = try await nextSync(peer)
        await peer.close(code: 1006, reason: "gone")
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        #expect(await peer2.header == "token-1")
        guard case .ping(let ping)? = await peer2.next() else { Issue.record("expected resend Ping"); return }
        #expect(ping.resendMissing)
        #expect(ping.ack == 2)
        board.score = 2
        let second = try #require(scope.flush())
        #expect(await quiet(peer2), "held until the server's resend frame")
        await peer2.send(.ping(Ping(ack: 0, resendMissing: true)))
        let resent = try await nextSync(peer2)
        #expect(resent == sync1)
        let sync2 = try await nextSync(peer2)
        #expect(sync2.index == 3)
        await peer2.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: 2, fragmentReplies: [.accepted])),
                         .scopeSyncReply(ScopeSyncReply(index: 4, replyTo: 3, fragmentReplies: [.accepted])))
        #expect(await first.settled() == .completed)
        #expect(await second.settled() == .completed)
        #expect(client.status == .online)
        await client.close()
    }

    @Test func acknowledgedMessagesAreNotResent() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 1
        _ = try await nextSync(peer)
        await peer.send(.ping(Ping(ack: 2)))
        await peer.close(code: 1006)
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        _ = await peer2.next()
        // A sequenced message after the resend Ping: a keep-alive acknowledging it comes after
        // anything the Ping made the client resend.
        await peer2.send(.ping(Ping(ack: 2, resendMissing: true)),
                         .scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [])))
        #expect(await quiet(peer2, ack: 3))
        await client.close()
    }

    @Test func fatalCloseStartsANewSessionRefetchesAndResendsPendingChangeSets() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 99
        let pending = try #require(scope.flush())
        _ = try await nextSync(peer)
        await peer.close(code: JetstreamCloseCode.expired)
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        #expect(await peer2.header == nil)
        guard case .sessionCreate? = await peer2.next() else { Issue.record("expected SessionCreate"); return }
        await peer2.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-2")))
        guard case .scopeFetch(let fetch)? = await peer2.nextNonPing() else { Issue.record("expected refetch"); return }
        #expect(fetch.index == 1)
        await peer2.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: 1, scopeIndex: 4)),
                         .scopeState(ScopeState(index: 2, scopeIndex: 4, rootUUID: rootUUID, fragments: [
                            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["title": "fresh", "score": 7]),
                         ])))
        let resent = try await nextSync(peer2)
        #expect(resent.index == 2 && resent.scopeIndex == 4)
        #expect(resent.fragments.first?.properties["score"] == 99)
        #expect(board.score == 99, "the pending key keeps its local value")
        #expect(await eventually { board.title == "fresh" })
        await peer2.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: 2, fragmentReplies: [.accepted])))
        #expect(await pending.settled() == .completed)
        await client.close()
    }

    @Test func outOfOrderMessageForcesAResume() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        await peer.send(.scopeSync(ScopeSync(index: 5, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 1]),
        ])))
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        guard case .ping(let ping)? = await peer2.next() else { Issue.record("expected resend Ping"); return }
        #expect(ping.resendMissing && ping.ack == 2)
        #expect(board.score == 7)
        await client.close()
    }

    @Test func offlineEditsAreQueuedAndSentOnReconnect() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        connector.setFailing(true)
        await peer.close(code: 1006)
        #expect(await eventually { client.status == .connecting })
        board.score = 42
        let offline = try #require(scope.flush())
        await clock.endBackoff()           // a connect that fails: the client backs off again
        #expect(await clock.waitForSleepers(dueWithin: TestClock.maximumBackoff))
        connector.setFailing(false)
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer(timeout: .seconds(30))
        _ = await peer2.next()
        await peer2.send(.ping(Ping(ack: 1, resendMissing: true)))
        let sync = try await nextSync(peer2)
        #expect(sync.fragments.first?.properties["score"] == 42)
        await peer2.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: [.accepted])))
        #expect(await offline.settled() == .completed)
        await client.close()
    }

    @Test func syncOffAndManualModesHoldChangesUntilSync() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        session.setMode(.manual, for: scope)
        board.score = 5
        let held = try #require(scope.flush())
        #expect(await quiet(peer))
        // A remote change is not applied in manual mode.
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["title": "remote"]),
        ])))
        #expect(await quiet(peer, ack: 3))
        #expect(board.title == "server")
        let syncTask = Task { try await session.sync(scope) }
        // sync() catches up with a refetch first, then sends.
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { Issue.record("expected refetch"); return }
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 4, replyTo: fetch.index, scopeIndex: 0)),
                        .scopeState(ScopeState(index: 5, scopeIndex: 0, rootUUID: rootUUID, fragments: [
                            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["title": "remote", "score": 7]),
                        ])))
        let sync = try await nextSync(peer)
        #expect(board.title == "remote" && board.score == 5)
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 6, replyTo: sync.index, fragmentReplies: [.accepted])))
        try await syncTask.value
        #expect(held.state == .completed)
        session.setMode(.syncOff, for: scope)
        board.score = 6
        #expect(await quiet(peer))
        session.setMode(.realtime, for: scope)
        let resumed = try await nextSync(peer)
        #expect(resumed.fragments.first?.properties["score"] == 6)
        await client.close()
    }

    @Test func pausedIncomingMessagesAreAppliedOnResume() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        session.pauseIncoming()
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 70]),
        ])))
        #expect(await eventually { session.heldIncomingCount == 1 })
        #expect(board.score == 7)
        session.resumeIncoming()
        #expect(board.score == 70)
        await client.close()
    }

    @Test func keepAlivePingsCarryTheAcknowledgement() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await connect(connector)
        let (scope, _) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        #expect(await keepAlive(peer, ack: 1)?.ack == 2)
        await client.close()
    }

    @Test func lateReplyLeadsToResendThenToANewSession() async throws {
        let connector = ScriptedConnector()
        var options = testOptions(clock: clock)
        options.pingInterval = .seconds(1)
        options.replyTimeout = .seconds(2)
        let (client, session, peer) = try await connect(connector, options: options)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        board.score = 1
        let pending = try #require(scope.flush())
        let sync = try await nextSync(peer)
        // No reply: the client resumes and resends.
        await tickUntilReconnect(interval: options.pingInterval)
        let peer2 = try await connector.nextPeer()
        guard case .ping(let resume)? = await peer2.next() else { Issue.record("expected resend Ping"); return }
        #expect(resume.resendMissing)
        await peer2.send(.ping(Ping(ack: 1, resendMissing: true)))
        #expect(try await nextSync(peer2) == sync)
        // Still no reply: a new session, a refetch, and the change set sent again.
        await tickUntilReconnect(interval: options.pingInterval)
        let peer3 = try await connector.nextPeer()
        guard case .sessionCreate? = await peer3.next() else { Issue.record("expected SessionCreate"); return }
        await peer3.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-3")))
        guard case .scopeFetch? = await peer3.nextNonPing() else { Issue.record("expected refetch"); return }
        await peer3.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: 1, scopeIndex: 0)),
                         .scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: rootUUID, fragments: [
                            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 7]),
                         ])))
        let again = try await nextSync(peer3)
        #expect(again.fragments == sync.fragments)
        await peer3.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: again.index, fragmentReplies: [.accepted])))
        #expect(await pending.settled() == .completed)
        #expect(board.score == 1)
        await client.close()
    }

    /// Change sets sent one by one whose replies never came go one by one again, under their own
    /// ids, in the new session that follows: a server may have applied them, and answers each as a
    /// repeat only under the id it applied it under (merged into a batch with a new id, they would
    /// be applied twice, over what others wrote meanwhile). Control: the same scene where they were
    /// never sent (made while the scope does not sync) goes as one batch.
    @Test(arguments: [true, false])
    func changeSetsSentAloneGoAloneAgainInANewSession(sentBefore: Bool) async throws {
        let connector = ScriptedConnector()
        var options = testOptions(clock: clock)
        options.pingInterval = .seconds(1)
        options.replyTimeout = .seconds(2)
        let (client, session, peer) = try await connect(connector, options: options, extensions: ["contrailTest"])
        let (scope, board) = makeScope()
        scope.historyLimit = 0  // no undo steps: both may coalesce
        try await fetch(scope, session: session, peer: peer)
        if !sentBefore { session.setMode(.syncOff, for: scope) }
        board.score = 1
        let first = try #require(scope.flush())
        board.title = "mine"
        let second = try #require(scope.flush())
        if sentBefore {
            #expect(try await nextSync(peer).changeSetID == first.id)
            #expect(try await nextSync(peer).changeSetID == second.id)
        } else {
            session.setMode(.realtime, for: scope)
            _ = try await nextSync(peer)
        }
        // No reply: resumed, resent, still no reply: a new session and a refetch.
        await tickUntilReconnect(interval: options.pingInterval)
        let peer2 = try await connector.nextPeer()
        guard case .ping? = await peer2.next() else { Issue.record("expected resend Ping"); return }
        await peer2.send(.ping(Ping(ack: 1, resendMissing: true)))
        for _ in 0..<(sentBefore ? 2 : 1) { _ = try await nextSync(peer2) }
        await tickUntilReconnect(interval: options.pingInterval)
        let peer3 = try await connector.nextPeer()
        guard case .sessionCreate? = await peer3.next() else { Issue.record("expected SessionCreate"); return }
        await peer3.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-3", extensions: ["contrailTest"])))
        guard case .scopeFetch? = await peer3.nextNonPing() else { Issue.record("expected refetch"); return }
        await peer3.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: 1, scopeIndex: 0)),
                         .scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: rootUUID, fragments: [
                            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["score": 7]),
                         ])))
        let again = try await nextSync(peer3)
        if sentBefore {
            #expect(again.changeSetID == first.id && again.fragments.count == 1, "alone, under its own id: \(again)")
            let next = try await nextSync(peer3)
            #expect(next.changeSetID == second.id, "alone, under its own id: \(next)")
            await peer3.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: again.index, fragmentReplies: [.accepted])),
                             .scopeSyncReply(ScopeSyncReply(index: 4, replyTo: next.index, fragmentReplies: [.accepted])))
        } else {
            #expect(again.changeSetID != first.id && again.changeSetID != second.id, "one batch: \(again)")
            #expect(again.fragments.first?.properties["title"] == "mine" && again.fragments.first?.properties["score"] == 1)
            await peer3.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: again.index, fragmentReplies: [.accepted])))
        }
        #expect(await first.settled() == .completed)
        #expect(await second.settled() == .completed)
        await client.close()
    }

    /// Fires keep-alives until one finds a reply overdue (the client backs off to reconnect), then
    /// ends the backoff. A keep-alive sleeps again only after its tick was handled, so waiting for
    /// its next sleep also waits for any backoff the tick started.
    func tickUntilReconnect(interval: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
        for _ in 0..<10 {
            #expect(await clock.waitForSleepers(dueWithin: interval * 1.1), sourceLocation: sourceLocation)
            if clock.sleeperCount(dueWithin: TestClock.maximumBackoff) > 0 { break }
            clock.advance(by: interval * 1.1)
        }
        await clock.endBackoff(sourceLocation: sourceLocation)
    }

    @Test func pendingChangeSetsAreBounded() async throws {
        let connector = ScriptedConnector()
        var options = testOptions(clock: clock)
        options.maxPendingMessages = 2
        let (client, session, peer) = try await connect(connector, options: options)
        let (scope, board) = makeScope()
        try await fetch(scope, session: session, peer: peer)
        for value in 1...3 { board.score = value; scope.flush() }
        let first = try await nextSync(peer)
        _ = try await nextSync(peer)
        #expect(await quiet(peer), "the third waits until a reply frees a slot")
        #expect(session.pendingChangeSets == 3)
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: first.index, fragmentReplies: [.accepted])))
        let third = try await nextSync(peer)
        #expect(third.fragments.first?.properties["score"] == 3)
        await client.close()
    }

    @Test func statusEventsFollowTheConnection() async throws {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: clock))
        var seen: [Client.Status] = []
        client.onStatusChange(connector) { seen.append($0) }
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        _ = await peer.next()
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "t")))
        try await task.value
        await peer.close(code: 1006)
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        _ = await peer2.next()
        #expect(await eventually { seen == [.connecting, .online, .connecting, .online] })
        await client.close()
        #expect(seen.last == .offline)
    }
}

@Suite struct CollectionMergeTests {
    /// An insert lands after what was inserted at the same spot concurrently (applied earlier).
    @Test func concurrentInsertsBothSurvive() {
        #expect(CollectionMerge.merge(base: [1], new: [1, 2], current: [1, 3]) == [1, 3, 2])
        #expect(CollectionMerge.merge(base: [], new: [2], current: [3]) == [3, 2])
    }

    @Test func removalsAndMovesApplyToTheCurrentValue() {
        #expect(CollectionMerge.merge(base: [1, 2, 3], new: [1, 3], current: [1, 2, 3, 4]) == [1, 3, 4])
        #expect(CollectionMerge.merge(base: [1, 2, 3], new: [3, 1, 2], current: [1, 2, 3, 4]) == [3, 1, 2, 4])
        #expect(CollectionMerge.merge(base: [1, 2], new: [1, 2], current: [5]) == [5])
        #expect(CollectionMerge.merge(base: [1, 2], new: [1, 2, 9], current: [1, 2]) == [1, 2, 9])
    }
}

/// Client status and sync status as async sequences: the current value first, then each change;
/// they end when their source is freed.
@MainActor
@Suite struct StatusSequenceTests {
    @Test func clientStatusUpdatesStartWithTheCurrentStatusAndFollowTheConnection() async throws {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions())
        var updates = client.statusUpdates().makeAsyncIterator()
        #expect(await updates.next() == .offline)
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        _ = await peer.next()
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "t")))
        try await task.value
        #expect(await updates.next() == .connecting)
        #expect(await updates.next() == .online)
        await client.close()
        #expect(await updates.next() == .offline)
    }

    @Test func clientStatusUpdatesEndWhenTheClientIsFreed() async throws {
        var client: Client? = Client(connector: ScriptedConnector(), options: testOptions())
        weak let weakClient = client
        let stream = try #require(client).statusUpdates()
        client = nil
        #expect(weakClient == nil)
        var seen: [Client.Status] = []
        for await status in stream { seen.append(status) }   // ends: would hang otherwise
        #expect(seen == [.offline])
    }

    @Test func syncStatusUpdatesStartWithTheCurrentStatus() async throws {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions())
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        _ = await peer.next()
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "t")))
        try await task.value
        let session = try #require(client.session)
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let fetch = Task { try await session.fetch(scope) }
        guard case .scopeFetch(let request)? = await peer.nextNonPing() else { Issue.record("expected ScopeFetch"); return }
        let root = UUID()
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: request.index, scopeIndex: 0)),
                        .scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: root,
                                               fragments: [SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["score": 1])])))
        try await fetch.value
        var updates = session.syncStatusUpdates().makeAsyncIterator()
        #expect(await updates.next() == .synced)
        board.score = 2
        guard case .scopeSync(let sync)? = await peer.nextNonPing() else { Issue.record("expected ScopeSync"); return }
        #expect(await updates.next() == .syncing(pending: 1))
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: [.accepted])))
        #expect(await updates.next() == .synced)
        await client.close()
    }
}
