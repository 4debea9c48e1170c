import Contrail
import ContrailServer
import Foundation
import Testing

/// A session hands consecutive ScopeSyncs of one scope to it in one turn (``ServerSession``): what
/// the client sees must be what it saw when each went alone, in order, refusals included.
@Suite("Runs of change sets")
struct SyncRunTests {
    private static func sync(_ index: Int, scopeIndex: Int = 0, _ root: String, title: String) -> JSON {
        ["type": "ScopeSync", "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
         "fragments": [Wire.fragment("change", root, "Root", ["title": .string(title)])]]
    }

    /// The sender's messages until `count` ScopeSyncReplies and the fetch's two have come, in order.
    private static func replies(_ client: ServerTestClient, count: Int) async throws -> [JSON] {
        var messages: [JSON] = []
        while messages.filter({ $0["type"] == "ScopeSyncReply" }).count < count || !messages.contains(where: { $0["type"] == "ScopeState" }) {
            messages.append(try await client.next())
        }
        return messages
    }

    /// One frame: two good syncs around one naming an unknown scope index, a fetch of a second
    /// scope, then a sync of that scope. The refusal and the fetch split the run, and every reply
    /// comes in the order of the messages.
    private static func frame(_ root: String) -> JSON {
        [sync(2, root, title: "one"), sync(3, scopeIndex: 9, root, title: "never"), sync(4, root, title: "two"),
         ["type": "ScopeFetch", "index": 5, "name": "T", "params": [:]], sync(6, scopeIndex: 1, root, title: "elsewhere")]
    }

    private static func check(_ messages: [JSON], reader: ServerTestClient, server: ContrailServer, root: String) async throws {
        let answers = messages.compactMap { message -> String? in
            switch message["type"]?.stringValue {
            case "ScopeSyncReply": return "reply \(message["replyTo"]?.int64Value ?? -1)"
            case "ScopeFetchReply": return "fetch \(message["replyTo"]?.int64Value ?? -1)"
            default: return nil
            }
        }
        #expect(answers == ["reply 2", "reply 3", "reply 4", "fetch 5", "reply 6"])
        let byReply = Dictionary(messages.filter { $0["type"] == "ScopeSyncReply" }.map { ($0["replyTo"]?.int64Value ?? -1, $0) },
                                 uniquingKeysWith: { first, _ in first })
        #expect(byReply[2]?["fragmentReplies"]?[0] == [:])
        #expect(byReply[3]?["fragmentReplies"]?[0]?["error"]?["message"] == "Scope at index 9 was not found")
        #expect(byReply[4]?["fragmentReplies"]?[0] == [:])
        // The root of "T" is another object: the change names an object "T" does not hold.
        #expect(byReply[6]?["fragmentReplies"]?[0]?["error"]?["message"] == "ModelObject not found")
        // The reader got the two accepted change sets, in order, and nothing of the refused one.
        let first = try await reader.next(), second = try await reader.next()
        #expect(first["fragments"]?[0]?["properties"]?["title"] == "one")
        #expect(second["fragments"]?[0]?["properties"]?["title"] == "two")
        #expect(await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["title"] == "two")
    }

    @Test func aFrameOfMessagesIsAnsweredInOrderAcrossRefusalsAndAFetch() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = ServerTestClient(server: server), b = ServerTestClient(server: server)
        let root = try await ServerTestClient.sessionsOnOneScope(a, b)
        try await a.send(Self.frame(root))
        try await Self.check(try await Self.replies(a, count: 4), reader: b, server: server, root: root)
        await server.stop()
    }

    /// The same messages as separate WebSocket frames sent back to back: the server takes the frames
    /// at hand together, and the answers must not change.
    @Test func framesAtHandAreAnsweredAsIfOneAtATime() async throws {
        let server = try ContrailServer(options: Wire.options())
        let port = try await server.start()
        let a = try await ServerTestClient.connect(port: port), b = try await ServerTestClient.connect(port: port)
        let root = try await ServerTestClient.sessionsOnOneScope(a, b)
        for message in try #require(Self.frame(root).arrayValue) { try await a.send(message) }
        try await Self.check(try await Self.replies(a, count: 4), reader: b, server: server, root: root)
        await server.stop()
    }
}
