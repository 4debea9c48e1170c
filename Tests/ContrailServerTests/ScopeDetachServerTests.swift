import Contrail
import ContrailServer
import Foundation
import Testing

/// `ScopeDetach` (a Contrail extension) at the server, with raw frames: the session leaves the
/// scope, its index is forgotten, and other sessions keep syncing.
@Suite("Server ScopeDetach")
struct ScopeDetachServerTests {
    /// Sessions a, b, c on scope "S" (each scope index 0); returns them and the root UUID.
    private func threeClients(_ server: ContrailServer) async throws -> (ServerTestClient, ServerTestClient, ServerTestClient, String) {
        let clients = (0..<3).map { _ in ServerTestClient(server: server) }
        var root = ""
        for client in clients {
            try await client.createSession()
            let (reply, state) = try await client.fetch("S", index: 1)
            #expect(reply["scopeIndex"] == 0)
            root = try #require(state["rootUUID"]?.stringValue)
        }
        return (clients[0], clients[1], clients[2], root)
    }

    private func detach(_ client: ServerTestClient, index: Int, scopeIndex: Int) async throws -> JSON {
        try await client.send(["type": "ScopeDetach", "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex))])
        let reply = try await client.next()
        #expect(reply["type"] == "ScopeDetachReply")
        #expect(reply["replyTo"] == .int(Int64(index)))
        return reply
    }

    @Test func sessionCreateReplyAdvertisesTheExtension() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.send(#"{"type":"SessionCreate","index":0,"version":"0.1.0","params":{}}"#)
        let reply = try await client.next()
        #expect(reply["sessionToken"]?.stringValue != nil)
        #expect(reply["extensions"]?.arrayValue?.contains("ScopeDetach") == true)
        await server.stop()
    }

    @Test func detachedSessionGetsNoMoreBroadcastsWhileOthersDo() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, b, c, root) = try await threeClients(server)
        // Positive control: before the detach, b receives a's change.
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "one"])])
        #expect(try await b.next()["type"] == "ScopeSync")
        #expect(try await c.next()["type"] == "ScopeSync")
        let reply = try await detach(b, index: 2, scopeIndex: 0)
        #expect(reply["error"] == nil)
        #expect(reply["index"] == 4)   // after b's fetch reply, state and the broadcast
        _ = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["title": "two"])])
        let broadcast = try await c.next()
        #expect(broadcast["type"] == "ScopeSync" && broadcast["fragments"]?[0]?["properties"]?["title"] == "two")
        // a had its reply, so a broadcast to b would already be in b's outbox, ahead of this fetch's reply.
        let (other, _) = try await b.fetch("T", index: 3)
        #expect(other["replyTo"] == 3 && other["scopeIndex"] == 1)
        #expect(await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["title"] == "two")
        await server.stop()
    }

    @Test func refetchAfterDetachGivesANewIndexAndTheCurrentState() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, b, _, root) = try await threeClients(server)
        #expect(try await detach(b, index: 2, scopeIndex: 0)["error"] == nil)
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "while away"])])
        let (reply, state) = try await b.fetch("S", index: 3)
        #expect(reply["scopeIndex"] == 1)   // a detached index is not given out again
        let rootState = state["fragments"]?.arrayValue?.first { $0["uuid"]?.stringValue == root }
        #expect(rootState?["properties"]?["title"] == "while away")
        // Subscribed again: a's next change reaches b under the new index.
        _ = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["title": "back"])])
        let broadcast = try await b.next()
        #expect(broadcast["type"] == "ScopeSync" && broadcast["scopeIndex"] == 1)
        // The old index is gone: a ScopeSync naming it is refused per fragment.
        let stale = try await b.sync(index: 4, scopeIndex: 0, fragments: [Wire.fragment("change", root, "Root", ["title": "stale"])])
        #expect(stale["fragmentReplies"]?[0]?["error"]?["type"] == "scope-index-not-found")
        await server.stop()
    }

    @Test func unknownScopeIndexGetsATypedErrorReplyNotAClose() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.createSession()
        let reply = try await detach(client, index: 1, scopeIndex: 9)
        #expect(reply["error"] == ["message": "Scope at index 9 was not found", "type": "scope-index-not-found"])
        // Detaching twice: the second is unknown too.
        _ = try await client.fetch("S", index: 2)
        #expect(try await detach(client, index: 3, scopeIndex: 0)["error"] == nil)
        #expect(try await detach(client, index: 4, scopeIndex: 0)["error"]?["type"] == "scope-index-not-found")
        // The connection is still open and the session works.
        let (fetched, _) = try await client.fetch("S", index: 5)
        #expect(fetched["scopeIndex"] == 1)
        #expect(client.closed == nil)
        await server.stop()
    }

    @Test func malformedScopeDetachClosesWithBadInputAndTheSessionSurvives() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.createSession()
        try await client.send(#"{"type":"ScopeDetach","index":1,"scopeIndex":"zero"}"#)
        let closed = try await client.awaitClose()
        #expect(closed?.code == JetstreamCloseCode.badInput)
        #expect(closed?.reason.contains("Invalid scopeIndex") == true)
    }
}
