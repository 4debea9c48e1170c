import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// The stuck-after-restarts class (issue 23): a server stopped while a scope was loading kept its
/// log locked, so the server started next on the same data refused the scope; the clients' refetch
/// of their new sessions failed, and their pending change sets waited for good while online.
@MainActor
@Suite struct RestartRecoveryTests {
    let clock = TestClock()
    let rootUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!

    @Test func aServerStoppedWhileAScopeLoadsLeavesItsLogFree() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("restart-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        func makeServer() throws -> ContrailServer {
            var options = ServerOptions()
            options.dataDirectory = directory
            options.establishTimeout = .seconds(120)  // the main actor may be busy on a loaded machine
            options.log = nil
            return try ContrailServer(options: options)
        }
        let first = try makeServer()
        let (scope, board) = ClientTests().makeScope()
        let client = try await Client.sync(scope, connector: first.connector(), options: testOptions(clock: clock))
        #expect(try await #require(scope.modify { board.score = 3 }).settled(timeout: .seconds(30)) == .completed)
        await client.close()
        #expect(await first.state(ofScope: "Board") != nil, "positive control: the scope is on disk and loads")
        await first.stop()
        for round in 0..<40 {
            let stopping = try makeServer()
            let load = Task { await stopping.state(ofScope: "Board") }   // a load under way…
            await Task.yield()
            await stopping.stop()                                          // …when the server stops
            _ = await load.value
            let next = try makeServer()
            #expect(await next.state(ofScope: "Board") != nil, "round \(round): the next server loads the scope")
            await next.stop()
        }
    }

    @Test func aRefusedRefetchIsRetriedAndThePendingChangeSetGoesOut() async throws {
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: clock))
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        guard case .sessionCreate? = await peer.next() else { Issue.record("expected SessionCreate"); return }
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1")))
        try await task.value
        let session = try #require(client.session)
        let (scope, board) = harness.makeScope()
        try await harness.fetch(scope, session: session, peer: peer)
        board.score = 99
        let pending = try #require(scope.flush())
        guard case .scopeSync? = await peer.nextNonPing() else { Issue.record("expected ScopeSync"); return }
        await peer.close(code: JetstreamCloseCode.expired)
        await clock.endBackoff()
        let peer2 = try await connector.nextPeer()
        guard case .sessionCreate? = await peer2.next() else { Issue.record("expected SessionCreate"); return }
        await peer2.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-2")))
        guard case .scopeFetch(let refused)? = await peer2.nextNonPing() else { Issue.record("expected refetch"); return }
        await peer2.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: refused.index, error: WireErrorBody(message: "Scope could not be loaded"))))
        await clock.endBackoff()
        guard case .scopeFetch(let retried)? = await peer2.nextNonPing() else { Issue.record("expected a retried fetch"); return }
        #expect(retried.index == refused.index + 1 && retried.name == "Board")
        await peer2.send(.scopeFetchReply(ScopeFetchReply(index: 2, replyTo: retried.index, scopeIndex: 0)),
                         .scopeState(ScopeState(index: 3, scopeIndex: 0, rootUUID: rootUUID, fragments: [
                            SyncFragment(kind: .change, uuid: rootUUID, className: "Board", properties: ["title": "t", "score": 7]),
                         ])))
        guard case .scopeSync(let resent)? = await peer2.nextNonPing() else { Issue.record("expected the pending ScopeSync"); return }
        #expect(resent.fragments.first?.properties["score"] == 99)
        await peer2.send(.scopeSyncReply(ScopeSyncReply(index: 4, replyTo: resent.index, fragmentReplies: [.accepted])))
        #expect(try await pending.settled(timeout: .seconds(30)) == .completed)
        await client.close()
    }

    @Test func theAppsOwnFailedFetchIsNotRetried() async throws {
        // Control: a first fetch that fails throws to the app, and nothing fetches behind its back.
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let (client, session, peer) = try await harness.connect(connector)
        let (scope, _) = harness.makeScope()
        let fetching = Task { try await session.fetch(scope) }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else { Issue.record("expected ScopeFetch"); return }
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: fetch.index, error: WireErrorBody(message: "no"))))
        await #expect(throws: SyncError.self) { try await fetching.value }
        await harness.clock.fireKeepAlive()
        // The next message is the keep-alive, not another fetch (a retry would come within 20 ms).
        guard case .ping? = await peer.next() else { Issue.record("expected only a keep-alive"); return }
        await client.close()
    }
}
