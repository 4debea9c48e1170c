import Contrail
import ContrailWebSocket
import Foundation
import Synchronization
import Testing

/// A scope's state larger than the client's message limit from a server that cannot send it in
/// parts (an original Jetstream server: no §8.25): the fetch fails with
/// `SyncError.stateTooLarge(limit:)`, the client does not fetch it again in a loop (it goes on with a
/// new session), and an app that raises `ClientOptions.maxMessageBytes` takes it.
@MainActor
@Suite("A state over the client's message limit") struct StateTooLargeTests {
    nonisolated static let rootUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!

    /// A raw Jetstream server over WebSocket: no extensions; it answers every `ScopeFetch` with a
    /// state of `cards` cards of 1,000 characters each, in one `ScopeState`, and counts the fetches
    /// by scope name and the sessions created.
    final class RawServer: Sendable {
        let server = WebSocketServer(host: "127.0.0.1", port: 0)
        let fetches = Mutex<[String: Int]>([:])
        let sessions = Mutex(0)

        func start(cards: [String: Int]) async throws -> UInt16 {
            let port = try await server.start()
            Task { [self] in
                for await connection in server.connections {
                    Task { try await serve(connection, cards: cards) }
                }
            }
            return port
        }

        private func serve(_ connection: WebSocketConnection, cards: [String: Int]) async throws {
            var index = 0
            func send(_ message: (Int) -> Message) async throws {
                index += 1
                try await connection.send(.text(MessageFrame.encode([message(index)], asArray: false)))
            }
            for try await frame in connection.messages {
                guard case .text(let text) = frame else { continue }
                for message in try MessageFrame.decode(text) {
                    switch message {
                    case .sessionCreate:
                        let count = sessions.withLock { $0 += 1; return $0 }
                        // Unsequenced: the first sequenced message is index 1.
                        let reply = Message.sessionCreateReply(SessionCreateReply(sessionToken: "token-\(count)"))
                        try await connection.send(.text(MessageFrame.encode([reply], asArray: false)))
                    case .scopeFetch(let fetch):
                        let scopeIndex = fetches.withLock { $0[fetch.name, default: 0] += 1; return $0.values.reduce(0, +) }
                        try await send { .scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, scopeIndex: scopeIndex)) }
                        let state = StateTooLargeTests.state(cards: cards[fetch.name] ?? 1)
                        try await send { .scopeState(ScopeState(index: $0, scopeIndex: scopeIndex, rootUUID: StateTooLargeTests.rootUUID, fragments: state)) }
                    default:
                        break
                    }
                }
            }
        }

        func fetchCount(_ name: String) -> Int { fetches.withLock { $0[name, default: 0] } }
    }

    /// A root and `cards` cards of 1,000 characters each (about 1 KiB of JSON per card).
    nonisolated static func state(cards: Int) -> [SyncFragment] {
        let uuids = (0..<cards).map { _ in UUID() }
        let root = SyncFragment(kind: .change, uuid: rootUUID, className: "Board",
                                properties: ["cards": .array(uuids.map { .string($0.wireString) })])
        return [root] + uuids.map {
            SyncFragment(kind: .add, uuid: $0, className: "Card", properties: ["text": .string(String(repeating: "x", count: 1_000))])
        }
    }

    func options(limit: Int) -> ClientOptions {
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(1), maximum: .milliseconds(20), jitter: 0.5)
        options.maxMessageBytes = limit
        return options
    }

    func makeScope(_ name: String) -> (Scope, Board) {
        let scope = Scope(name: name)
        let board = Board()
        scope.root = board
        return (scope, board)
    }

    @Test func aStateOverTheLimitIsATypedErrorAndNotFetchedAgain() async throws {
        let raw = RawServer()
        let port = try await raw.start(cards: ["Big": 200, "Small": 3])
        let client = Client(url: "ws://127.0.0.1:\(port)/", options: options(limit: 64 << 10))
        let session = try await client.connect()
        let (big, bigBoard) = makeScope("Big")
        await #expect(throws: SyncError.stateTooLarge(limit: 64 << 10)) { try await session.fetch(big) }
        #expect(client.lastError == .stateTooLarge(limit: 64 << 10))
        #expect(bigBoard.cards.isEmpty)
        // The client goes on (a new session: resuming would resend the same state) and does not
        // fetch the big scope again: the small fetch, sent after any refetch, is answered first.
        let (small, smallBoard) = makeScope("Small")
        try await session.fetch(small)
        #expect(smallBoard.cards.count == 3)
        #expect(raw.fetchCount("Big") == 1, "the state over the limit was fetched once, not in a loop")
        #expect(raw.sessions.withLock { $0 } == 2)
        await client.close()
        await raw.server.stop()
    }

    /// The positive controls: a state under the limit, and the big state once the app raised it.
    @Test(arguments: [(64 << 10, 40), (1 << 20, 200)])
    func aStateWithinTheLimitIsFetched(limit: Int, cards: Int) async throws {
        let raw = RawServer()
        let port = try await raw.start(cards: ["Board": cards])
        let client = Client(url: "ws://127.0.0.1:\(port)/", options: options(limit: limit))
        let session = try await client.connect()
        let (scope, board) = makeScope("Board")
        try await session.fetch(scope)
        #expect(board.cards.count == cards)
        #expect(client.lastError == nil)
        await client.close()
        await raw.server.stop()
    }
}
