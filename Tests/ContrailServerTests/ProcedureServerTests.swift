import Contrail
import ContrailServer
import Foundation
import Testing

/// Procedures and constraints at the server (Protocol §4.6–4.7), with the original's error texts.
@Suite("Server procedures and constraints")
struct ProcedureServerTests {
    /// The declarations file the tests (and `contrail serve --procedures`) read.
    static let file = """
    {"procedures": [
      {"name": "Canvas.rename", "constraints": [
        {"type": "change", "clsName": "Canvas", "properties": {"name": {"$hasNewValue": true}}}]},
      {"name": "Canvas.paint", "constraints": [
        {"type": "change", "clsName": "Canvas", "properties": {"color": 255}}]},
      {"name": "Canvas.addShape", "constraints": [
        {"type": "change", "clsName": "Canvas", "properties": {"shapes": {"$arrayInsert": true}}},
        {"type": "add", "clsName": "Shape", "properties": {}, "allowAdditionalProperties": true}]},
      {"name": "Canvas.removeShape", "constraints": [
        {"type": "change", "clsName": "Canvas", "properties": {"shapes": {"$arrayRemove": true}}}]}
    ]}
    """

    static func procedures(renameHandler: (@Sendable (ServerProcedure.Call) throws(ProcedureError) -> [SyncFragment])? = nil) throws -> [ServerProcedure] {
        let declared = try ServerProcedure.list(json: JSON(parsing: Array(file.utf8)))
        guard let renameHandler else { return declared }
        return declared.map { $0.declaration.name == "Canvas.rename" ? ServerProcedure($0.declaration, handler: renameHandler) : $0 }
    }

    /// A server with the declared procedures and two sessions on "Canvas", whose root is a Canvas
    /// holding one shape. Returns the clients, the root and the shape.
    private func setUp(_ procedures: [ServerProcedure]) async throws -> (ContrailServer, ServerTestClient, ServerTestClient, String, String) {
        var options = Wire.options()
        options.procedures = procedures
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        let b = ServerTestClient(server: server)
        try await a.createSession()
        try await b.createSession()
        let (_, state) = try await a.fetch("Canvas", index: 1)
        _ = try await b.fetch("Canvas", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let shape = Wire.uuid()
        let reply = try await a.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Canvas", ["name": "one", "color": 1, "shapes": Wire.array([shape])]),
            Wire.fragment("add", shape, "Shape", ["x": 1]),
        ])
        #expect(reply["fragmentReplies"] == [[:], [:]])
        _ = try await b.next()   // the broadcast
        return (server, a, b, root, shape)
    }

    /// Sends a procedure call; returns its reply.
    private func call(_ client: ServerTestClient, index: Int, _ procedure: String, _ fragments: [JSON]) async throws -> JSON {
        try await client.send(["type": "ScopeSync", "index": .int(Int64(index)), "scopeIndex": 0, "atomic": true,
                               "procedure": .string(procedure), "fragments": .array(fragments)])
        while true {
            let reply = try await client.next()
            if reply["type"] == "ScopeSyncReply" { return reply }
        }
    }

    private func errors(_ reply: JSON) -> [String?] {
        (reply["fragmentReplies"]?.arrayValue ?? []).map { $0["error"]?["message"]?.stringValue }
    }

    private func name(_ server: ContrailServer, _ root: String) async -> JSON? {
        await server.state(ofScope: "Canvas")?["objects"]?[root]?["properties"]?["name"]
    }

    @Test func unknownModelAndProcedureAreRejectedWithTheOriginalsTexts() async throws {
        let (server, a, _, root, _) = try await setUp(try Self.procedures())
        let model = try await call(a, index: 3, "Board.rename", [Wire.fragment("change", root, "Canvas", ["name": "x"])])
        #expect(errors(model) == ["Could not apply SyncMessage: No such model 'Board' for procedure call with procedure 'Board.rename'"])
        #expect(model["fragmentReplies"]?[0]?["error"]?["type"] == "could-not-apply-sync-message")
        let procedure = try await call(a, index: 4, "Canvas.explode", [Wire.fragment("change", root, "Canvas", ["name": "x"])])
        #expect(errors(procedure) == ["Could not apply SyncMessage: No such procedure 'explode' for model 'Canvas'"])
        #expect(await name(server, root) == "one")
        await server.stop()
    }

    @Test func hasNewValueAndNoAdditionalPropertiesAllOrNothing() async throws {
        let (server, a, _, root, shape) = try await setUp(try Self.procedures())
        let mismatch = "Could not apply SyncMessage: Changes do not match the procedure constraints"
        // An extra key on the fragment: rejected (additional properties are not allowed).
        let extra = try await call(a, index: 3, "Canvas.rename", [Wire.fragment("change", root, "Canvas", ["name": "two", "color": 2])])
        #expect(errors(extra) == [mismatch])
        // One good fragment and one no constraint matches: both rejected, nothing applied.
        let mixed = try await call(a, index: 4, "Canvas.rename", [
            Wire.fragment("change", root, "Canvas", ["name": "two"]),
            Wire.fragment("change", shape, "Shape", ["x": 5]),
        ])
        #expect(errors(mixed) == [mismatch, mismatch])
        #expect(await name(server, root) == "one")
        // Positive control.
        let good = try await call(a, index: 5, "Canvas.rename", [Wire.fragment("change", root, "Canvas", ["name": "two"])])
        #expect(errors(good) == [nil])
        #expect(await name(server, root) == "two")
        await server.stop()
    }

    @Test func plainValueMustBeEqual() async throws {
        let (server, a, _, root, _) = try await setUp(try Self.procedures())
        let wrong = try await call(a, index: 3, "Canvas.paint", [Wire.fragment("change", root, "Canvas", ["color": 254])])
        #expect(errors(wrong) == ["Could not apply SyncMessage: Changes do not match the procedure constraints"])
        let right = try await call(a, index: 4, "Canvas.paint", [Wire.fragment("change", root, "Canvas", ["color": .double(255.0)])])
        #expect(errors(right) == [nil])
        await server.stop()
    }

    @Test func arrayInsertNeedsAGrowingCollectionAndAllowsAdditionalProperties() async throws {
        let (server, a, b, root, shape) = try await setUp(try Self.procedures())
        let same = try await call(a, index: 3, "Canvas.addShape", [Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([shape])])])
        #expect(errors(same) == ["Could not apply SyncMessage: Changes do not match the procedure constraints"])
        let added = Wire.uuid()
        let grown = try await call(a, index: 4, "Canvas.addShape", [
            Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([shape, added])]),
            Wire.fragment("add", added, "Shape", ["x": 2, "y": 3]),
        ])
        #expect(errors(grown) == [nil, nil])
        let broadcast = try await b.next()
        #expect(broadcast["fragments"]?.arrayValue?.count == 2)
        await server.stop()
    }

    @Test func arrayRemoveNeedsAShrinkingCollection() async throws {
        let (server, a, _, root, shape) = try await setUp(try Self.procedures())
        // The original tested "longer" here (§6): a growing collection must be refused.
        let grown = try await call(a, index: 3, "Canvas.removeShape", [
            Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([shape, shape])]),
        ])
        #expect(errors(grown) == ["Could not apply SyncMessage: Changes do not match the procedure constraints"])
        let shrunk = try await call(a, index: 4, "Canvas.removeShape", [Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([])])])
        #expect(errors(shrunk) == [nil])
        #expect(await server.state(ofScope: "Canvas")?["objects"]?[root]?["properties"]?["shapes"] == [])
        await server.stop()
    }

    @Test func followUpUpdatesReachEverySessionBeforeTheReply() async throws {
        let procedures = try Self.procedures { (call: ServerProcedure.Call) throws(ProcedureError) -> [SyncFragment] in
            guard let uuid = call.fragments.first?.uuid else { throw .handlerFailed("nothing to rename") }
            return [SyncFragment(kind: .change, uuid: uuid, className: "Canvas", properties: ["color": 7])]
        }
        let (server, a, b, root, _) = try await setUp(procedures)
        try await a.send(["type": "ScopeSync", "index": 3, "scopeIndex": 0, "atomic": true, "procedure": "Canvas.rename",
                          "fragments": [Wire.fragment("change", root, "Canvas", ["name": "two"])]])
        // The caller gets the follow-up first, then its reply.
        let first = try await a.next()
        #expect(first["type"] == "ScopeSync")
        #expect(first["fragments"]?[0]?["properties"] == ["color": 7])
        let reply = try await a.next()
        #expect(reply["type"] == "ScopeSyncReply")
        #expect(errors(reply) == [nil])
        // The other session gets the call's fragments, then the follow-up.
        #expect(try await b.next()["fragments"]?[0]?["properties"] == ["name": "two"])
        #expect(try await b.next()["fragments"]?[0]?["properties"] == ["color": 7])
        #expect(await server.state(ofScope: "Canvas")?["objects"]?[root]?["properties"]?["color"] == 7)
        await server.stop()
    }

    @Test func aFailingHandlerRejectsTheWholeCall() async throws {
        let procedures = try Self.procedures { _ throws(ProcedureError) in throw .handlerFailed("rename is closed") }
        let (server, a, _, root, _) = try await setUp(procedures)
        let reply = try await call(a, index: 3, "Canvas.rename", [Wire.fragment("change", root, "Canvas", ["name": "two"])])
        #expect(errors(reply) == ["Could not apply SyncMessage: rename is closed"])
        #expect(await name(server, root) == "one")
        await server.stop()
    }

    @Test func malformedDeclarationsAreTypedErrors() throws {
        #expect(throws: ProcedureError.self) { try ServerProcedure.list(json: ["procedures": [["name": "rename", "constraints": []]]]) }
        #expect(throws: ProcedureError.self) {
            try ServerProcedure.list(json: ["procedures": [["name": "Canvas.rename", "constraints": [["type": "delete", "clsName": "Canvas"]]]]])
        }
        #expect(throws: ProcedureError.self) { try ServerProcedure.list(json: ["procedure": []]) }
        #expect(try Self.procedures().count == 4)
    }

    @Test func constraintRulesInIsolation() throws {
        let uuid = UUID()
        let noProperties = ProcedureConstraint(kind: .change, className: "Canvas")
        let empty = SyncFragment(kind: .change, uuid: uuid, className: "Canvas", properties: [:])
        let named = SyncFragment(kind: .change, uuid: uuid, className: "Canvas", properties: ["name": "x"])
        #expect(noProperties.matches(empty) { _, _ in nil })
        #expect(!noProperties.matches(named) { _, _ in nil })
        var open = noProperties
        open.allowsAdditionalProperties = true
        #expect(open.matches(named) { _, _ in nil })
        #expect(!open.matches(SyncFragment(kind: .add, uuid: uuid, className: "Canvas", properties: [:])) { _, _ in nil })
        // On an add only an insert constraint can match a collection.
        let remove = ProcedureConstraint(kind: .add, className: "Canvas", properties: ["shapes": .arrayRemove])
        #expect(!remove.matches(SyncFragment(kind: .add, uuid: uuid, className: "Canvas", properties: ["shapes": []])) { _, _ in nil })
        // An empty change set always matches.
        #expect(ProcedureConstraint.allMatch([remove], []) { _, _ in nil })
    }
}
