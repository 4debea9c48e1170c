import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A tile: three integers, the small object of issue 26's big scope.
final class Tile: ModelObject {
    @Property var a = 0
    @Property var b = 0
    @Property var c = 0
}

/// The root of a big scope: holds the tiles.
final class TileBoard: ModelObject {
    @Property var tiles: [Tile] = []
}

/// Big scopes open, with progress (issue 26, item 4; Protocol §8.25): a state larger than one part
/// streams as `ScopeStateChunk`s, flow-controlled by acknowledgements, to a client that asks for
/// them; an original-shaped client still gets one `ScopeState`, or a typed error past the limit.
@MainActor
@Suite("Big scopes") struct BigScopeTests {
    let clock = TestClock()

    func makeServer(_ configure: (inout ServerOptions) -> Void = { _ in }) throws -> ContrailServer {
        var options = Wire.options()
        configure(&options)
        return try ContrailServer(options: options)
    }

    /// Writes `count` tiles (tile i holds i, 2i, 3i) into scope `name` through a raw session, in
    /// change sets within the fragment limit; returns the writer (its next index is `nextIndex`)
    /// and the root UUID.
    func populate(_ server: ContrailServer, name: String = "Big", count: Int) async throws -> (writer: ServerTestClient, root: String, tiles: [String], nextIndex: Int) {
        let writer = ServerTestClient(server: server)
        try await writer.createSession()
        let (_, state) = try await writer.fetch(name, index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        var tiles: [String] = []
        var index = 2
        while tiles.count < count {
            var fragments: [JSON] = []
            for n in tiles.count..<min(count, tiles.count + 9_999) {
                let uuid = Wire.uuid()
                tiles.append(uuid)
                fragments.append(Wire.fragment("add", uuid, "Tile", ["a": .int(Int64(n)), "b": .int(Int64(2 * n)), "c": .int(Int64(3 * n))]))
            }
            fragments.append(Wire.fragment("change", root, "TileBoard", ["tiles": Wire.array(tiles)]))
            let reply = try await writer.sync(index: index, fragments: fragments)
            #expect(reply["fragmentReplies"]?.arrayValue?.allSatisfy { $0["error"] == nil } == true)
            index += 1
        }
        return (writer, root, tiles, index)
    }

    func makeScope(_ name: String = "Big") -> (Scope, TileBoard) {
        ModelRegistry.register(TileBoard.self, Tile.self)
        let scope = Scope(name: name)
        let board = TileBoard()
        scope.root = board
        return (scope, board)
    }

    @Test func hundredThousandObjectsArriveWholeWithProgress() async throws {
        let server = try makeServer()
        _ = try await populate(server, count: 100_000)
        let (scope, board) = makeScope()
        let client = Client(connector: server.connector(), options: testOptions(clock: clock))
        let session = try await client.connect()
        let record = try await FetchRecord.fetch(scope, in: session) { board.tiles.count }
        #expect(record.countsDuringFetch == [0])  // the app never sees half a state
        #expect(board.tiles.count == 100_000)
        #expect(scope.count == 100_001)
        #expect(board.tiles.enumerated().allSatisfy { $1.a == $0 && $1.b == 2 * $0 && $1.c == 3 * $0 })
        #expect(record.reports.count > 10, "a 19 MB state comes in many parts: \(record.reports.count)")
        #expect(record.risesTo(100_001), "\(record.reports.suffix(3))")
        // Live afterwards: a change made here reaches the server.
        board.tiles[7].a = -7
        #expect(await eventually { session.pendingChangeSets == 0 })
        await client.close()
        await server.stop()
    }

    /// A change set another client makes while the state streams goes out between the parts; the
    /// client holds it and applies it right after the state, once. Both ways a server streams: a
    /// small scope's cached parts (1,000 tiles), and a big scope's parts encoded by a producer from
    /// a snapshot while the first ones are on the wire (25,000 tiles, over the cache's bound).
    @Test(arguments: [(1_000, 20), (25_000, 1_000)])
    func changeDuringTheStreamLandsOnceAfterIt(count: Int, partObjects: Int) async throws {
        let server = try makeServer { options in
            options.stateChunkObjects = partObjects
            // A window of part 0 (the root's collection: 41 bytes a tile) and a dozen parts more, of
            // ten times as many in all; room besides for the broadcast.
            options.maxResendBytes = 41 * count + partObjects * 1_400
        }
        let (writer, _, tiles, firstIndex) = try await populate(server, count: count)
        var index = firstIndex
        let (scope, board) = makeScope()
        let client = Client(connector: server.connector(), options: testOptions(clock: clock))
        let session = try await client.connect()
        session.pauseIncoming()   // no acknowledgements: the server stops after its window
        var seen: [FetchProgress] = []
        let fetch = Task { try await session.fetch(scope) { seen.append($0) } }
        #expect(await eventually { session.heldIncomingCount >= 2 }, "the reply and the first part arrive")
        // Small changes (a broadcast of the root's collection of 1,000 would not fit this window).
        let reply = try await writer.sync(index: index, fragments: [
            Wire.fragment("change", tiles[0], "Tile", ["a": -1]),
            Wire.fragment("change", tiles[count - 1], "Tile", ["c": -3]),
        ])
        index += 1
        #expect(reply["fragmentReplies"]?.arrayValue?.count == 2)
        session.resumeIncoming()
        try await fetch.value
        #expect(seen.last == FetchProgress(received: count + 1, total: count + 1))
        #expect(seen.count > 10)
        #expect(board.tiles.count == count)
        #expect(board.tiles[0].a == -1 && board.tiles[count - 1].c == -3, "the change made during the stream is applied after it")
        #expect(board.tiles[1].a == 1 && board.tiles[count - 2].c == 3 * (count - 2))
        // And later broadcasts follow as usual.
        _ = try await writer.sync(index: index, fragments: [Wire.fragment("change", tiles[1], "Tile", ["b": -2])])
        #expect(await eventually { board.tiles[1].b == -2 })
        await client.close()
        await server.stop()
    }

    /// Wire level: parts are numbered as acknowledgements make room, a broadcast goes between
    /// them, and a client that drops mid-stream resumes with its token and gets the rest in order.
    @Test func streamResumesAfterADisconnectAndInterleavesBroadcasts() async throws {
        let server = try makeServer { options in
            options.stateChunkObjects = 20
            options.maxResendBytes = 32 << 10
        }
        let (writer, root, tiles, index) = try await populate(server, count: 1_000)
        let reader = ServerTestClient(server: server)
        let token = try await reader.createSession()
        try await reader.send(#"{"type":"ScopeFetch","index":1,"name":"Big","params":{},"chunks":true}"#)
        let fetchReply = try await reader.next()
        #expect(fetchReply["type"] == "ScopeFetchReply" && fetchReply["scopeIndex"] == 0)
        var parts: [JSON] = []
        while parts.count < 2 {
            let message = try await reader.next()
            #expect(message["type"] == "ScopeStateChunk")
            parts.append(message)
            // Only the first part is acknowledged: the next waits for it (the first, with the root's
            // collection of 1,000, is over the window alone).
            if parts.count == 1 {
                try await reader.send(#"{"type":"Ping","index":0,"ack":\#(message["index"]?.int64Value ?? 0),"resendMissing":false}"#)
            }
        }
        #expect(parts[0]["offset"] == 0 && parts[0]["total"] == 1_001 && parts[0]["rootUUID"] == .string(root))
        _ = try await writer.sync(index: index, fragments: [Wire.fragment("change", tiles[5], "Tile", ["a": -5])])
        await reader.transport.close(code: 1006, reason: "network gone")
        // Resume, acknowledging the first part only: the second is sent again.
        let acked = Int(parts[0]["index"]?.int64Value ?? 0)
        let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token)])
        try await resumed.send(#"{"type":"Ping","index":0,"ack":\#(acked),"resendMissing":true}"#)
        let exchange = try await resumed.next()
        #expect(exchange["type"] == "Ping" && exchange["resendMissing"] == true)
        var indices: [Int] = []
        var offsets: [Int] = [Int(parts[0]["offset"]?.int64Value ?? -1)]
        var received = parts[0]["fragments"]?.arrayValue?.count ?? 0
        var syncBeforeLastPart = false
        while received < 1_001 {
            let message = try await resumed.next()
            let messageIndex = Int(message["index"]?.int64Value ?? 0)
            indices.append(messageIndex)
            try await resumed.send(#"{"type":"Ping","index":0,"ack":\#(messageIndex),"resendMissing":false}"#)
            if message["type"] == "ScopeSync" {
                syncBeforeLastPart = true
                continue
            }
            #expect(message["type"] == "ScopeStateChunk" && message["total"] == 1_001)
            offsets.append(Int(message["offset"]?.int64Value ?? -1))
            #expect(offsets.last == received, "parts come in order, each once")
            received += message["fragments"]?.arrayValue?.count ?? 0
        }
        #expect(received == 1_001)
        #expect(indices == Array((acked + 1)...(acked + indices.count)), "every message once, in order")
        #expect(syncBeforeLastPart, "the broadcast went out between the parts")
        #expect(offsets.count > 20)
        await server.stop()
    }

    /// A client that does not ask for parts (an original Jetstream client) gets one `ScopeState`;
    /// past the limit of one message it gets a typed fetch error, and its session goes on.
    @Test func originalShapedClientGetsOneStateOrATypedError() async throws {
        let server = try makeServer { options in
            options.stateChunkObjects = 20
            options.maxResendBytes = 64 << 10
        }
        _ = try await populate(server, name: "Small", count: 100)
        _ = try await populate(server, name: "Big", count: 1_000)
        let original = ServerTestClient(server: server)
        try await original.createSession()
        // Positive control: a state of more than one part, in one ScopeState.
        let (reply, state) = try await original.fetch("Small", index: 1)
        #expect(reply["scopeIndex"] == 0)
        #expect(state["fragments"]?.arrayValue?.count == 101)
        try await original.send(#"{"type":"ScopeFetch","index":2,"name":"Big","params":{}}"#)
        let refused = try await original.next()
        #expect(refused["type"] == "ScopeFetchReply" && refused["replyTo"] == 2)
        #expect(refused["error"]?["type"] == "state-too-large", "\(refused)")
        // The session is intact: another fetch is answered.
        try await original.send(#"{"type":"ScopeFetch","index":3,"name":"Small","params":{}}"#)
        let again = try await original.next()
        #expect(again["type"] == "ScopeFetchReply" && again["replyTo"] == 3 && again["scopeIndex"] == 0)
        // A client that asks for parts gets the big one.
        let chunked = ServerTestClient(server: server)
        try await chunked.createSession()
        try await chunked.send(#"{"type":"ScopeFetch","index":1,"name":"Big","params":{},"chunks":true}"#)
        #expect(try await chunked.next()["scopeIndex"] == 0)
        #expect(try await chunked.next()["type"] == "ScopeStateChunk")
        await server.stop()
    }

    /// A state within one part comes as one `ScopeState`, reported once, whole.
    @Test func smallStateComesWholeWithOneProgressReport() async throws {
        let server = try makeServer()
        _ = try await populate(server, count: 50)
        let (scope, board) = makeScope()
        let client = Client(connector: server.connector(), options: testOptions(clock: clock))
        let session = try await client.connect()
        var seen: [FetchProgress] = []
        try await session.fetch(scope) { seen.append($0) }
        #expect(board.tiles.count == 50)
        #expect(seen == [FetchProgress(received: 51, total: 51)], "a state in one message is reported once, whole")
        await client.close()
        await server.stop()
    }
}
