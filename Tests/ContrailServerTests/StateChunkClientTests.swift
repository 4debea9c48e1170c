import Contrail
import ContrailTestSupport
import Foundation
import Testing

/// The client's side of `ScopeStateChunk` (Protocol §8.25) against a scripted server: it asks for
/// parts only from a server that lists the extension, applies a state only once its last part is
/// in, and refuses parts that do not follow (bad counts, out of order, oversized) with a typed
/// error, leaving the scope as it was.
@MainActor
@Suite("State chunks on the client") struct StateChunkClientTests {
    let rootUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    let clock = TestClock()

    func connect(extensions: [String]) async throws -> (Client, Session, ScriptedPeer) {
        let connector = ScriptedConnector()
        let client = Client(connector: connector, options: testOptions(clock: clock))
        let task = Task { _ = try await client.connect() }
        let peer = try await connector.nextPeer()
        _ = await peer.next()
        await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-1", extensions: extensions)))
        try await task.value
        return (client, try #require(client.session), peer)
    }

    func makeScope() -> (Scope, Board) {
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        return (scope, board)
    }

    /// The root (with `cards` items) and `cards` cards, as a state's fragments.
    func fragments(cards: Int) -> [SyncFragment] {
        let uuids = (0..<cards).map { _ in UUID() }
        let root = SyncFragment(kind: .change, uuid: rootUUID, className: "Board",
                                properties: ["title": "server", "cards": .array(uuids.map { .string($0.wireString) })])
        return [root] + uuids.enumerated().map { n, uuid in
            SyncFragment(kind: .add, uuid: uuid, className: "Card", properties: ["text": .string("card \(n)"), "votes": .int(Int64(n))])
        }
    }

    func part(_ index: Int, _ fragments: [SyncFragment], offset: Int, total: Int, root: UUID? = nil) -> Message {
        .scopeStateChunk(ScopeStateChunk(index: index, scopeIndex: 0, rootUUID: root ?? rootUUID, total: total, offset: offset,
                                         fragments: fragments))
    }

    /// Starts a fetch and answers it with `ScopeFetchReply` (index 1); returns the fetch task and
    /// the progress it saw.
    func startFetch(_ scope: Scope, session: Session, peer: ScriptedPeer, replyIndex: Int = 1, expectChunks: Bool = true) async throws
        -> (Task<Void, any Error>, ProgressLog) {
        let log = ProgressLog()
        let task = Task { try await session.fetch(scope) { log.seen.append($0) } }
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else {
            Issue.record("expected ScopeFetch")
            throw SyncError.closed
        }
        #expect(fetch.chunks == expectChunks)
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: replyIndex, replyTo: fetch.index, scopeIndex: 0)))
        return (task, log)
    }

    @Test func partsAreAppliedWholeOnceTheLastArrives() async throws {
        let (client, session, peer) = try await connect(extensions: [ScopeStateChunk.typeName])
        let (scope, board) = makeScope()
        let (fetch, log) = try await startFetch(scope, session: session, peer: peer)
        let state = fragments(cards: 4)
        await peer.send(part(2, Array(state[0..<2]), offset: 0, total: 5), part(3, Array(state[2..<4]), offset: 2, total: 5))
        // Acknowledged part by part, so the server can send more; nothing applied yet.
        var acked = 0
        while acked < 3, let message = await peer.next() {
            if case .ping(let ping) = message { acked = max(acked, ping.ack) }
        }
        #expect(acked == 3)
        #expect(log.seen.count == 2)
        #expect(board.cards.isEmpty && board.title == "")
        await peer.send(part(4, [state[4]], offset: 4, total: 5))
        try await fetch.value
        #expect(board.cards.map(\.votes) == [0, 1, 2, 3] && board.title == "server")
        #expect(log.seen.map(\.received) == [2, 4, 5] && log.seen.allSatisfy { $0.total == 5 })
        await client.close()
    }

    @Test func aServerWithoutTheExtensionIsNotAskedForParts() async throws {
        let (client, session, peer) = try await connect(extensions: [])
        let (scope, board) = makeScope()
        let (fetch, log) = try await startFetch(scope, session: session, peer: peer, expectChunks: false)
        await peer.send(.scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: rootUUID, fragments: fragments(cards: 2))))
        try await fetch.value
        #expect(board.cards.count == 2)
        #expect(log.seen == [FetchProgress(received: 3, total: 3)])
        await client.close()
    }

    /// Each hostile second part refuses the state with `invalidState`; the scope is untouched.
    @Test(arguments: ["gap", "overlap", "total changed", "root changed", "past total", "empty"])
    func partsThatDoNotFollowAreATypedError(_ problem: String) async throws {
        let (client, session, peer) = try await connect(extensions: [ScopeStateChunk.typeName])
        let (scope, board) = makeScope()
        board.title = "local"
        let (fetch, _) = try await startFetch(scope, session: session, peer: peer)
        let state = fragments(cards: 4)
        await peer.send(part(2, Array(state[0..<2]), offset: 0, total: 5))
        let second: Message = switch problem {
        case "gap": part(3, [state[3]], offset: 3, total: 5)
        case "overlap": part(3, [state[1]], offset: 1, total: 5)
        case "total changed": part(3, Array(state[2..<5]), offset: 2, total: 6)
        case "root changed": part(3, Array(state[2..<5]), offset: 2, total: 5, root: UUID())
        case "past total": part(3, Array(state[2..<5]) + [state[1]], offset: 2, total: 5)
        default: part(3, [], offset: 2, total: 5)
        }
        await peer.send(second)
        await #expect(throws: SyncError.self) { try await fetch.value }
        if case .invalidState? = client.lastError {} else { Issue.record("expected invalidState, got \(String(describing: client.lastError))") }
        #expect(board.title == "local" && board.cards.isEmpty, "nothing of a refused state is applied")
        // The rest of the refused state is dropped; a new state (offset 0) is taken.
        await peer.send(part(4, Array(state[2..<5]), offset: 2, total: 5))
        let (again, _) = try await startFetch(scope, session: session, peer: peer, replyIndex: 5)
        await peer.send(part(6, Array(state[0..<3]), offset: 0, total: 5), part(7, Array(state[3..<5]), offset: 3, total: 5))
        try await again.value
        #expect(board.cards.count == 4 && board.title == "server")
        await client.close()
    }

    /// Answers the `ScopeFetch` a `fetchWithProgress` sent (reply index 1).
    func answerFetch(_ peer: ScriptedPeer) async throws {
        guard case .scopeFetch(let fetch)? = await peer.nextNonPing() else {
            Issue.record("expected ScopeFetch")
            throw SyncError.closed
        }
        await peer.send(.scopeFetchReply(ScopeFetchReply(index: 1, replyTo: fetch.index, scopeIndex: 0)))
    }

    @Test func progressAsASequenceGrowsToTheTotalAndEndsWhenUsable() async throws {
        let (client, session, peer) = try await connect(extensions: [ScopeStateChunk.typeName])
        let (scope, board) = makeScope()
        let progress = session.fetchWithProgress(scope)
        try await answerFetch(peer)
        let state = fragments(cards: 6)
        await peer.send(part(2, Array(state[0..<3]), offset: 0, total: 7), part(3, Array(state[3..<5]), offset: 3, total: 7),
                        part(4, Array(state[5..<7]), offset: 5, total: 7))
        var seen: [FetchProgress] = []
        for try await step in progress { seen.append(step) }
        #expect(seen.map(\.received) == [3, 5, 7] && seen.allSatisfy { $0.total == 7 })
        #expect(seen.last?.fraction == 1)
        #expect(board.cards.count == 6, "the sequence ends once the scope is usable")
        await client.close()
    }

    @Test func progressAsASequenceOfAWholeStateIsOneStep() async throws {
        let (client, session, peer) = try await connect(extensions: [])
        let (scope, board) = makeScope()
        let progress = session.fetchWithProgress(scope)
        try await answerFetch(peer)
        await peer.send(.scopeState(ScopeState(index: 2, scopeIndex: 0, rootUUID: rootUUID, fragments: fragments(cards: 2))))
        var seen: [FetchProgress] = []
        for try await step in progress { seen.append(step) }
        #expect(seen == [FetchProgress(received: 3, total: 3)])
        #expect(board.cards.count == 2)
        await client.close()
    }

    @Test func aFailedFetchEndsTheSequenceWithItsError() async throws {
        let (client, session, peer) = try await connect(extensions: [ScopeStateChunk.typeName])
        let (scope, board) = makeScope()
        let progress = session.fetchWithProgress(scope)
        try await answerFetch(peer)
        let state = fragments(cards: 4)
        await peer.send(part(2, Array(state[0..<2]), offset: 0, total: 5), part(3, [state[3]], offset: 3, total: 5))
        var seen: [FetchProgress] = []
        var failure: SyncError?
        do throws(SyncError) {
            for try await step in progress { seen.append(step) }
        } catch {
            failure = error
        }
        if case .invalidState? = failure {} else { Issue.record("expected invalidState, got \(String(describing: failure))") }
        #expect(seen.map(\.received) == [2])
        #expect(board.cards.isEmpty)
        await client.close()
    }

    @Test func firstPartNotAtZeroIsATypedError() async throws {
        let (client, session, peer) = try await connect(extensions: [ScopeStateChunk.typeName])
        let (scope, board) = makeScope()
        let (fetch, _) = try await startFetch(scope, session: session, peer: peer)
        await peer.send(part(2, Array(fragments(cards: 2)[1...]), offset: 1, total: 3))
        await #expect(throws: SyncError.self) { try await fetch.value }
        #expect(board.cards.isEmpty)
        await client.close()
    }
}

/// What a fetch's progress callback saw.
@MainActor
final class ProgressLog {
    var seen: [FetchProgress] = []
}
