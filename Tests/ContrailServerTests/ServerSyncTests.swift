import Contrail
import ContrailServer
import Foundation
import Testing

@Suite("Server sync semantics")
struct ServerSyncTests {
    /// A server with two sessions on scope "S"; returns the root UUID.
    private func twoClients(_ server: ContrailServer) async throws -> (ServerTestClient, ServerTestClient, String) {
        let a = ServerTestClient(server: server)
        let b = ServerTestClient(server: server)
        return (a, b, try await ServerTestClient.sessionsOnOneScope(a, b))
    }

    @Test func atomicChangeSetsAreAllOrNothing() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, _, root) = try await twoClients(server)
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "one"])])
        let reply = try await a.sync(index: 3, fragments: [
            Wire.fragment("change", root, "Root", ["title": "two"]),
            Wire.fragment("change", Wire.uuid(), "Root", ["title": "three"]),   // unknown object
        ], atomic: true)
        let entries = try #require(reply["fragmentReplies"]?.arrayValue)
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { $0["error"] != nil })
        #expect(entries[1]["error"]?["message"] == "ModelObject not found")
        let state = try #require(await server.state(ofScope: "S"))
        #expect(state["objects"]?[root]?["properties"]?["title"] == "one")
        // Without atomic, the good fragment applies.
        let partial = try await a.sync(index: 4, fragments: [
            Wire.fragment("change", root, "Root", ["title": "two"]),
            Wire.fragment("change", Wire.uuid(), "Root", ["title": "three"]),
        ])
        #expect(partial["fragmentReplies"]?[0] == [:])
        #expect(partial["fragmentReplies"]?[1]?["error"] != nil)
        #expect(await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["title"] == "two")
        await server.stop()
    }

    @Test func concurrentCollectionInsertsBothSurviveWithBases() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, b, root) = try await twoClients(server)
        let first = Wire.uuid()
        _ = try await a.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Root", ["items": Wire.array([first])]),
            Wire.fragment("add", first, "Item", ["n": 1]),
        ])
        _ = try await b.next()  // broadcast of the first item
        // Both insert at the end of [first], concurrently (same base).
        let fromA = Wire.uuid(), fromB = Wire.uuid()
        let replyA = try await a.sync(index: 3, fragments: [
            Wire.fragment("change", root, "Root", ["items": Wire.array([first, fromA])], bases: ["items": [first]]),
            Wire.fragment("add", fromA, "Item", ["n": 2]),
        ])
        // A merged collection always comes back in `modifications` (the sender may have moved on meanwhile).
        #expect(replyA["fragmentReplies"]?[0]?["modifications"]?["items"] == Wire.array([first, fromA]))
        #expect(replyA["fragmentReplies"]?[1] == [:])
        let replyB = try await b.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Root", ["items": Wire.array([first, fromB])], bases: ["items": [first]]),
            Wire.fragment("add", fromB, "Item", ["n": 3]),
        ])
        // B learns the merged value through `modifications`.
        #expect(replyB["fragmentReplies"]?[0]?["modifications"]?["items"] == Wire.array([first, fromA, fromB]))
        let items = await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["items"]
        #expect(items == Wire.array([first, fromA, fromB]))
        // A receives the merged value in B's broadcast.
        let broadcast = try await a.next()
        #expect(broadcast["fragments"]?[0]?["properties"]?["items"] == Wire.array([first, fromA, fromB]))
        // Without bases the array is replaced whole, and the dropped item is collected.
        _ = try await a.sync(index: 4, fragments: [Wire.fragment("change", root, "Root", ["items": Wire.array([fromB])])])
        let objects = try #require(await server.state(ofScope: "S")?["objects"]?.objectValue)
        #expect(objects.count == 2)
        #expect(objects[first] == nil && objects[fromA] == nil)
        await server.stop()
    }

    @Test func wrongTypesAndMissingTargetsAreRejectedPerFragment() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, _, root) = try await twoClients(server)
        let child = Wire.uuid()
        _ = try await a.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Root", ["count": 1, "name": "n", "child": .string(child)]),
            Wire.fragment("add", child, "Child", [:]),
        ])
        let reply = try await a.sync(index: 3, fragments: [
            Wire.fragment("change", root, "Root", ["count": "many"]),
            Wire.fragment("change", root, "Root", ["child": 5]),
            Wire.fragment("change", root, "Root", ["child": .string(Wire.uuid())]),
            Wire.fragment("add", Wire.uuid(), "Orphan", ["x": 1]),
            Wire.fragment("change", root, "Root", ["name": "ok", "child": .null]),
        ])
        let entries = try #require(reply["fragmentReplies"]?.arrayValue)
        #expect(entries[0]["error"]?["message"] == "Not valid type at 'count', should be Number")
        #expect(entries[1]["error"]?["message"] == "Cannot set property at 'child' as non-UUID")
        #expect(entries[2]["error"]?["message"]?.stringValue?.hasPrefix("No such ModelObject '") == true)
        #expect(entries[3]["error"]?["message"] == "No parents, parent sync fragment failed")
        #expect(entries[4] == [:])
        let state = try #require(await server.state(ofScope: "S"))
        #expect(state["objects"]?[child] == nil)   // collected once its reference was cleared
        #expect(state["objects"]?[root]?["properties"]?["count"] == 1)
        await server.stop()
    }

    /// A null element is a hole (NaN, or nil in an optional element) among elements of one kind
    /// (Protocol §3): accepted in a number array, while a string among numbers is still rejected.
    @Test func nullHolesAreAcceptedInArraysButMixedKindsAreNot() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, _, root) = try await twoClients(server)
        // Positive control: a plain number array teaches the property its kind.
        let first = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["numbers": [1, 2]])])
        #expect(first["fragmentReplies"]?[0] == [:])
        let holed = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["numbers": [1, .null]])])
        #expect(holed["fragmentReplies"]?[0] == [:])
        #expect(await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["numbers"] == [1, .null])
        // A string among numbers (the fragment rule) and a string array with a hole (the kind rule) are not.
        let mixed = try await a.sync(index: 4, fragments: [Wire.fragment("change", root, "Root", ["numbers": [1, "a"]])])
        #expect(mixed["fragmentReplies"]?[0]?["error"]?["message"]?.stringValue?.contains("not all array value types match") == true)
        let strings = try await a.sync(index: 5, fragments: [Wire.fragment("change", root, "Root", ["numbers": ["a", .null]])])
        #expect(strings["fragmentReplies"]?[0]?["error"]?["message"] == "Not valid type at 'numbers', should be array of Number")
        #expect(await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["numbers"] == [1, .null])
        // Only holes leave the kind open: the first element of a kind decides it.
        let open = try await a.sync(index: 6, fragments: [Wire.fragment("change", root, "Root", ["words": [.null]])])
        #expect(open["fragmentReplies"]?[0] == [:])
        let decided = try await a.sync(index: 7, fragments: [Wire.fragment("change", root, "Root", ["words": [.null, "x"]])])
        #expect(decided["fragmentReplies"]?[0] == [:])
        let wrong = try await a.sync(index: 8, fragments: [Wire.fragment("change", root, "Root", ["words": [3]])])
        #expect(wrong["fragmentReplies"]?[0]?["error"]?["message"] == "Not valid type at 'words', should be array of String")
        await server.stop()
    }

    @Test func invalidFragmentsAreAnsweredAndUnknownScopeIndexRejected() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, _, root) = try await twoClients(server)
        let reply = try await a.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Root", ["ok": 1]),
            ["type": "remove", "uuid": .string(root), "clsName": "Root", "properties": [:]],
        ])
        let entries = try #require(reply["fragmentReplies"]?.arrayValue)
        #expect(entries.count == 2)
        #expect(entries[1]["error"]?["message"] == "Invalid type")
        #expect(entries[0]["error"] != nil)
        let unknown = try await a.sync(index: 3, scopeIndex: 7, fragments: [Wire.fragment("change", root, "Root", ["ok": 1])])
        #expect(unknown["fragmentReplies"]?[0]?["error"] == ["message": "Scope at index 7 was not found", "type": "scope-index-not-found"])
        await server.stop()
    }

    @Test func malformedFramesCloseWith4098AndTheSessionResumes() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = ServerTestClient(server: server)
        let token = try await a.createSession()
        try await a.send("this is not json")
        let closed = try await a.awaitClose()
        #expect(closed?.code == 4098)
        #expect(closed?.reason.contains("bad-input") == true)
        let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token)])
        let (reply, _) = try await resumed.fetch("S", index: 1)
        #expect(reply["scopeIndex"] == 0)
        await server.stop()
    }

    @Test func duplicateFetchKeepsTheIndexAndDoesNotDoubleBroadcasts() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, b, root) = try await twoClients(server)
        let (again, _) = try await b.fetch("S", index: 2)
        #expect(again["scopeIndex"] == 0)
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["v": 1])])
        _ = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["v": 2])])
        let first = try await b.next(), second = try await b.next()
        #expect(first["fragments"]?[0]?["properties"]?["v"] == 1)
        #expect(second["fragments"]?[0]?["properties"]?["v"] == 2)
        // Empty change sets are not broadcast: B's next message is the reply to its own sync.
        _ = try await a.sync(index: 4, fragments: [])
        let reply = try await b.sync(index: 3, fragments: [])
        #expect(reply["replyTo"] == 3)
        await server.stop()
    }
}
