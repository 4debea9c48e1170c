import Contrail
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// A connector that counts connect attempts and can refuse them, around a `ScriptedConnector`.
final class CountingConnector: SyncConnector {
    let inner = ScriptedConnector()
    private let attempts = SanitizerVisibleMutex(0)

    var count: Int { attempts.withLock { $0 } }

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        attempts.withLock { $0 += 1 }
        return try await inner.connect(headers: headers)
    }
}

/// A client the test holds strongly until it sets `strong` to nil, and weakly after.
@MainActor
final class HeldClient {
    var strong: Client?
    weak var weak: Client?
    init(_ client: Client) { strong = client; weak = client }
}

/// Closing, dropping and reconnecting a client; waits that fail fast, time out or are cancelled.
@MainActor
@Suite struct ClientLifecycleTests {
    let base = ClientTests()

    @Test func closeEndsTheSessionAndConnectOpensANewOne() async throws {
        let connector = ScriptedConnector()
        let (client, first, peer) = try await base.connect(connector)
        await client.close()
        #expect(client.session == nil)
        #expect(client.status == .offline)
        while await peer.next(timeout: .seconds(30)) != nil {}   // drains to the end (bounded)
        #expect(await peer.isFinished)
        // A later connect opens a new transport and a new session.
        let task = Task { try await client.connect() }
        let second = try await connector.nextPeer()
        guard case .sessionCreate? = await second.next() else { Issue.record("expected SessionCreate"); return }
        await second.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-2")))
        let renewed = try await task.value
        #expect(renewed !== first)
        #expect(client.session === renewed)
        #expect(client.status == .online)
        await client.close()
    }

    @Test func concurrentConnectsShareOneAttempt() async throws {
        let connector = CountingConnector()
        let client = Client(connector: connector, options: testOptions(clock: base.clock))
        let one = Task { try await client.connect() }
        let two = Task { try await client.connect() }
        let peer = try await connector.inner.nextPeer()
        guard case .sessionCreate? = await peer.next() else { Issue.record("expected SessionCreate"); return }
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1")))
        let first = try await one.value
        let second = try await two.value
        #expect(first === second)
        #expect(connector.count == 1)
        #expect(client.status == .online)
        await client.close()
    }

    @Test func closeDuringConnectFailsEveryWaiter() async throws {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: base.clock))
        let one = Task { () -> SyncError? in
            do { _ = try await client.connect(); return nil } catch { return error as? SyncError }
        }
        let two = Task { () -> SyncError? in
            do { _ = try await client.connect(); return nil } catch { return error as? SyncError }
        }
        let peer = try await connector.nextPeer()
        guard case .sessionCreate? = await peer.next() else { Issue.record("expected SessionCreate"); return }
        await client.close()
        #expect(await one.value == .closed)
        #expect(await two.value == .closed)
        #expect(client.session == nil && client.status == .offline)
    }

    @Test func fetchOnAClosedSessionFailsAtOnce() async throws {
        let connector = ScriptedConnector()
        let (client, session, _) = try await base.connect(connector)
        await client.close()
        let (scope, _) = base.makeScope()
        // The clock never moves: only an immediate failure returns (the bound is a safety net).
        try await withTimeout(.seconds(30)) {
            await #expect(throws: SyncError.closed) { try await session.fetch(scope) }
        }
    }

    @Test func fetchReplyErrorWinsOverItsScopeIndex() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, _) = base.makeScope()
        let task = Task { () -> SyncError? in
            do { try await session.fetch(scope); return nil } catch { return error as? SyncError }
        }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { Issue.record("expected ScopeFetch"); return }
        let error = WireErrorBody(message: "Not allowed", type: "denied")
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: fetch.index, scopeIndex: 0, error: error)))
        #expect(await task.value == .fetchFailed(error))
        #expect(session.mode(of: scope) == nil)
        // Positive control: a reply with only a scope index attaches.
        try await base.fetch(scope, session: session, peer: peer, fetchIndex: 2, serverIndex: 2)
        #expect(session.mode(of: scope) == .realtime)
        await client.close()
    }

    @Test func syncThrowsForAScopeItDoesNotHold() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, _) = base.makeScope()
        await #expect(throws: SyncError.notFetched("Board")) { try await session.sync(scope) }
        try await base.fetch(scope, session: session, peer: peer)
        try await session.sync(scope, timeout: .seconds(30))   // nothing pending: returns at once
        await client.close()
        await #expect(throws: SyncError.closed) { try await session.sync(scope) }
    }

    @Test func syncTimesOutIsCancelledAndFailsOnClose() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        session.setMode(.manual, for: scope)
        board.score = 1
        // The server never answers: the deadline ends the wait.
        let timing = Task { () -> SyncError? in
            do { try await session.sync(scope, timeout: .milliseconds(50)); return nil } catch { return error as? SyncError }
        }
        #expect(await base.clock.waitForSleepers(dueWithin: .milliseconds(50)))
        base.clock.advance(by: .milliseconds(50))
        #expect(await timing.value == .timedOut)
        // Cancellation ends it too.
        let cancelled = Task { () -> SyncError? in
            do { try await session.sync(scope, timeout: .seconds(60)); return nil } catch { return error as? SyncError }
        }
        _ = try await base.nextSync(peer)
        cancelled.cancel()
        #expect(await cancelled.value == .cancelled)
        // And closing the client.
        let closing = Task { () -> SyncError? in
            do { try await session.sync(scope, timeout: .seconds(60)); return nil } catch { return error as? SyncError }
        }
        #expect(await eventually { session.pendingChangeSets == 1 })
        await client.close()
        #expect(await closing.value == .closed)
    }

    @Test func settlingCanTimeOutAndBeCancelled() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        let changeSet = try #require(scope.modify { board.score = 3 })
        let sync = try await base.nextSync(peer)
        let timing = Task { () -> SyncError? in
            do { _ = try await changeSet.settled(timeout: .milliseconds(20), clock: base.clock); return nil } catch { return error as? SyncError }
        }
        #expect(await base.clock.waitForSleepers(dueWithin: .milliseconds(20)))
        base.clock.advance(by: .milliseconds(20))
        #expect(await timing.value == .timedOut)
        let cancelled = Task { () -> SyncError? in
            do { _ = try await changeSet.settled(timeout: nil); return nil } catch { return error as? SyncError }
        }
        cancelled.cancel()
        #expect(await cancelled.value == .cancelled)
        // Positive control: the reply settles it.
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: [.accepted])))
        #expect(try await changeSet.settled(timeout: .seconds(30)) == .completed)
        await client.close()
    }

    @Test func emptyOrRootlessStatesAreRefusedWhole() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        board.title = "local"
        let other = UUID()
        var serverIndex = 1
        for (fetchIndex, fragments) in [(1, [SyncFragment]()),
                                        (2, [SyncFragment(kind: .add, uuid: other, className: "Card", properties: ["text": "x"])])] {
            let task = Task { () -> SyncError? in
                do { try await session.fetch(scope); return nil } catch { return error as? SyncError }
            }
            guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { Issue.record("expected ScopeFetch"); return }
            #expect(fetch.index == fetchIndex)
            await peer.send(.scopeFetchReply(ScopeFetchReply(index: serverIndex, replyTo: fetch.index, scopeIndex: 0)),
                            .scopeState(ScopeState(index: serverIndex + 1, scopeIndex: 0, rootUUID: base.rootUUID, fragments: fragments)))
            serverIndex += 2
            guard case .invalidState? = await task.value else { Issue.record("expected invalidState"); return }
            #expect(board.title == "local" && board.uuid != base.rootUUID && scope.object(for: other) == nil)
        }
        // Positive control: a state with its root applies.
        try await base.fetch(scope, session: session, peer: peer, fetchIndex: 3, serverIndex: serverIndex)
        #expect(board.title == "server")
        await client.close()
    }

    /// An empty full state for a replica with content (issue 23) is refused with a typed error,
    /// never applied as "no change": also one the server pushes with no fetch waiting, which the
    /// app learns from `Client.lastError`. The replica keeps its root and children.
    @Test func anEmptyStateForAReplicaWithContentIsRefusedWithATypedError() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        let card = UUID()
        try await base.fetch(scope, session: session, peer: peer, fragments: [
            SyncFragment(kind: .change, uuid: base.rootUUID, className: "Board", properties: ["title": "server", "cards": .array([.string(card.wireString)])]),
            SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["text": "kept"]),
        ])
        // Positive control: the state with content was applied.
        #expect(board.title == "server" && board.cards.map(\.uuid) == [card])
        #expect(client.lastError == nil)
        let before = scope.stateJSON()
        await peer.send(.scopeState(ScopeState(index: 3, scopeIndex: 0, rootUUID: base.rootUUID, fragments: [])))
        #expect(await eventually { client.lastError != nil })
        guard case .invalidState? = client.lastError else { Issue.record("expected invalidState, got \(String(describing: client.lastError))"); return }
        #expect(scope.stateJSON() == before, "nothing of the empty state was applied")
        await client.close()
    }

    /// A server that lists the `ScopeDetach` extension is told after the pending change sets; a
    /// Jetstream server (no `extensions`) never sees the message.
    @Test(arguments: [false, true])
    func detachSendsPendingChangesFirstThenStopsSyncing(advertised: Bool) async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector, extensions: advertised ? [ScopeDetach.typeName] : [])
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        session.setMode(.manual, for: scope)
        board.score = 1
        let detaching = Task { try await session.detach(scope, timeout: .seconds(30)) }
        let sync = try await base.nextSync(peer)   // the pending change goes out first
        await peer.send(.scopeSyncReply(ScopeSyncReply(index: 3, replyTo: sync.index, fragmentReplies: [.accepted])))
        if advertised {
            let message = await peer.nextNonPing()
            guard case .scopeDetach(let detach)? = message else {
                Issue.record("expected ScopeDetach, got \(String(describing: message))")
                return
            }
            #expect(detach.index == sync.index + 1 && detach.scopeIndex == 0)
            await peer.send(.scopeDetachReply(ScopeDetachReply(index: 4, replyTo: detach.index)))
        }
        #expect(try await detaching.value.isEmpty)
        #expect(session.mode(of: scope) == nil && !scope.isSynced)
        // Local edits stay local, remote changes are ignored.
        board.score = 2
        #expect(await base.quiet(peer))
        await peer.send(.scopeSync(ScopeSync(index: advertised ? 5 : 4, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: base.rootUUID, className: "Board", properties: ["title": "remote"]),
        ])))
        #expect(await base.quiet(peer, ack: advertised ? 5 : 4))
        #expect(board.title == "server")
        await #expect(throws: SyncError.notFetched("Board")) { try await session.sync(scope) }
        await client.close()
    }

    @Test func detachReportsChangesTheServerDidNotSettle() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        let changeSet = try #require(scope.modify { board.score = 5 })
        _ = try await base.nextSync(peer)
        let detaching = Task { try await session.detach(scope, timeout: .milliseconds(30)) }
        #expect(await base.clock.waitForSleepers(dueWithin: .milliseconds(30)))
        base.clock.advance(by: .milliseconds(30))
        let unsettled = try await detaching.value
        #expect(unsettled.count == 1 && unsettled.first === changeSet)
        #expect(session.pendingChangeSets == 0)
        await client.close()
    }

    @Test func pausesNest() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        session.pauseIncoming()
        session.pauseIncoming()
        await peer.send(.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: base.rootUUID, className: "Board", properties: ["score": 70]),
        ])))
        #expect(await eventually { session.heldIncomingCount == 1 })
        session.resumeIncoming()
        #expect(board.score == 7)   // one pause still holds
        session.resumeIncoming()
        #expect(board.score == 70)
        session.resumeIncoming()    // an unmatched resume does nothing
        session.pauseIncoming()
        await peer.send(.scopeSync(ScopeSync(index: 4, scopeIndex: 0, fragments: [
            SyncFragment(kind: .change, uuid: base.rootUUID, className: "Board", properties: ["score": 71]),
        ])))
        #expect(await eventually { session.heldIncomingCount == 1 })
        #expect(board.score == 70)
        session.resumeIncoming()
        #expect(board.score == 71)
        await client.close()
    }

    /// Connects a client; the app's only strong reference is `held.strong`.
    private func connectHeld(_ connector: CountingConnector) async throws -> (held: HeldClient, peer: ScriptedPeer) {
        let held = HeldClient(Client(connector: connector, options: testOptions(clock: base.clock)))
        let task = Task { [weak held] in _ = try await held?.strong?.connect() }
        let peer = try await connector.inner.nextPeer()
        guard case .sessionCreate? = await peer.next() else { throw SyncError.closed }
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1")))
        try await task.value
        #expect(held.strong?.status == .online)
        return (held, peer)
    }

    @Test func droppedOnlineClientClosesItsTransport() async throws {
        let connector = CountingConnector()
        let (held, peer) = try await connectHeld(connector)
        held.strong = nil
        #expect(await eventually { held.weak == nil })
        // The transport ends: the peer's stream finishes.
        while await peer.next(timeout: .seconds(30)) != nil {}
        #expect(await peer.isFinished)
        #expect(connector.count == 1)
    }

    @Test func droppedOfflineClientStopsReconnecting() async throws {
        let connector = CountingConnector()
        let (held, peer) = try await connectHeld(connector)
        // Positive control while the client lives: a lost connection makes it retry again and again.
        connector.inner.setFailing(true)
        await peer.close(code: 1001, reason: "gone")
        await base.clock.endBackoff()
        #expect(await eventually { connector.count >= 2 })
        await base.clock.endBackoff()
        #expect(await eventually { connector.count >= 3 })
        #expect(await base.clock.waitForSleepers(dueWithin: TestClock.maximumBackoff), "backing off once more")
        #expect(held.strong?.status == .connecting)
        held.strong = nil
        #expect(await eventually { held.weak == nil })
        let after = connector.count
        // The released client's backoff and keep-alive no longer sleep, and no time wakes them.
        #expect(base.clock.sleeperCount == 0)
        base.clock.advance(by: .seconds(60))
        await ChangeDelivery.main.drain()
        #expect(connector.count <= after + 1)
    }
}
