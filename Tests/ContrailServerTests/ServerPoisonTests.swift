import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// No poison (issue 8, item 4): raw wire messages that reference objects the scope does not hold
/// are rejected per fragment, whatever the server inferred about the property, and a typed client
/// can still fetch the scope afterwards.
@MainActor
@Suite("Server rejects dangling references")
struct ServerPoisonTests {
    @Test func danglingReferencesAreRejectedWhateverTheKind() async throws {
        let server = try ContrailServer(options: Wire.options())
        let raw = ServerTestClient(server: server)
        try await raw.createSession()
        let (_, state) = try await raw.fetch("Board", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let unknown = Wire.uuid()
        // Properties the server has not seen yet: a first value must not teach it "plain strings".
        let fresh = try await raw.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Board", ["cards": Wire.array([unknown])]),
            Wire.fragment("change", root, "Board", ["pinned": .string(unknown)]),
            Wire.fragment("change", root, "Board", ["title": "kept"]),
        ])
        #expect(fresh["fragmentReplies"]?[0]?["error"]?["message"] == .string("No such ModelObjects ['\(unknown)'] at 'cards'"))
        #expect(fresh["fragmentReplies"]?[1]?["error"]?["message"] == .string("No such ModelObject '\(unknown)' at 'pinned'"))
        #expect(fresh["fragmentReplies"]?[2] == [:])
        // Properties already known as plain strings: still rejected.
        let known = try await raw.sync(index: 3, fragments: [Wire.fragment("change", root, "Board", ["title": .string(unknown)])])
        #expect(known["fragmentReplies"]?[0]?["error"]?["message"] == .string("No such ModelObject '\(unknown)' at 'title'"))
        let (_, other) = try await raw.fetch("Other", index: 4)
        let otherRoot = try #require(other["rootUUID"]?.stringValue)
        let tags = try await raw.sync(index: 5, scopeIndex: 1, fragments: [Wire.fragment("change", otherRoot, "Note", ["tags": Wire.array(["a"])])])
        #expect(tags["fragmentReplies"] == [[:]])
        let moreTags = try await raw.sync(index: 6, scopeIndex: 1, fragments: [
            Wire.fragment("change", otherRoot, "Note", ["tags": .array(["b", .string(unknown)])]),
        ])
        #expect(moreTags["fragmentReplies"]?[0]?["error"]?["message"] == .string("No such ModelObjects ['\(unknown)'] at 'tags'"))
        // Positive control: a reference to an object added by the same change set is accepted.
        let card = Wire.uuid()
        let good = try await raw.sync(index: 7, fragments: [
            Wire.fragment("change", root, "Board", ["cards": Wire.array([card]), "pinned": .string(card)]),
            Wire.fragment("add", card, "Card", ["text": "real", "votes": 2]),
        ])
        #expect(good["fragmentReplies"] == [[:], [:]])
        // Every UUID-shaped string in the state names an object of the state.
        let stored = try #require(await server.state(ofScope: "Board")?["objects"]?.objectValue)
        for (_, object) in stored {
            for (_, value) in object["properties"]?.objectValue ?? [:] {
                for text in (value.arrayValue ?? [value]).compactMap(\.stringValue) where UUID(wireString: text) != nil {
                    #expect(stored[text] != nil, "dangling \(text) in the state")
                }
            }
        }
        // A typed client fetches the scope.
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        let fetched = await eventually(.seconds(30)) {
            (scope.root as? Board)?.cards.first?.text == "real"
        }
        #expect(fetched)
        let typed = try #require(scope.root as? Board)
        #expect(typed.title == "kept")
        #expect(typed.pinned?.text == "real")
        await client.close()
        await server.stop()
    }
}
