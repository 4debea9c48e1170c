import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// The admin surface in Swift (issue 28): sessions listed and ended, scopes listed, exported,
/// imported and compacted, each outcome asserted, with the refusals beside a positive control.
@Suite("Admin")
struct AdminTests {
    /// Params `{"user": name}`: that user with every scope.
    static func options(data: URL? = nil) -> ServerOptions {
        var options = Wire.options()
        options.dataDirectory = data
        options.sessionHook = { params, _ in
            guard case .string(let user)? = params["user"] else { return .deny() }
            return .allow(SessionIdentity(user: user, grants: .everything))
        }
        return options
    }

    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-admin-\(UUID().uuidString)", directoryHint: .isDirectory)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A scope with a Canvas root holding two shapes; returns the root's UUID.
    @discardableResult
    static func drawCanvas(_ client: ServerTestClient, scope: String, index: Int = 1, scopeIndex: Int = 0) async throws -> String {
        let (_, state) = try await client.fetch(scope, index: index)
        let root = try #require(state["rootUUID"]?.stringValue)
        let (a, b) = (Wire.uuid(), Wire.uuid())
        let reply = try await client.sync(index: index + 1, scopeIndex: scopeIndex, fragments: [
            Wire.fragment("change", root, "Canvas", ["name": "board", "shapes": Wire.array([a, b])]),
            Wire.fragment("add", a, "Shape", ["x": 10, "color": 1]),
            Wire.fragment("add", b, "Shape", ["x": 20, "color": 2]),
        ])
        #expect(reply["fragmentReplies"] == [[:], [:], [:]])
        return root
    }

    @Test func sessionsAreListedWithIdentityAddressScopesAndBytesQueued() async throws {
        let server = try ContrailServer(options: Self.options())
        let alice = ServerTestClient(server: server)
        let bob = ServerTestClient(server: server, peer: "203.0.113.9")
        try await alice.createSession(params: ["user": "alice"])
        try await bob.createSession(params: ["user": "bob"])
        try await Self.drawCanvas(alice, scope: "S")   // alice acknowledges nothing: her fetch's state stays queued
        let sessions = await server.sessions()
        #expect(sessions.map(\.user) == ["alice", "bob"])
        let (first, second) = (sessions[0], sessions[1])
        #expect(first.scopes == ["S"])
        #expect(second.scopes == [])
        #expect(first.address == "in-process")
        #expect(second.address == "203.0.113.9")
        #expect(first.bytesQueued > second.bytesQueued)
        #expect(first.isAdmin == false)
        #expect(first.json["bytesQueued"]?.int64Value == Int64(first.bytesQueued))
        #expect(first.json["token"] == nil)  // never a token
        let scopes = await server.scopes()
        #expect(scopes == [AdminScope(name: "S", isLoaded: true, objects: 3, subscribers: 1)])
        await server.stop()
    }

    @Test func endingASessionClosesItAndAnUnknownNumberIsRefused() async throws {
        let server = try ContrailServer(options: Self.options())
        let alice = ServerTestClient(server: server)
        let bob = ServerTestClient(server: server)
        try await alice.createSession(params: ["user": "alice"])
        try await bob.createSession(params: ["user": "bob"])
        let number = try #require(await server.sessions().first { $0.user == "alice" }?.number)
        await #expect(throws: AdminError.unknownSession(number + 100)) { try await server.endSession(number: number + 100) }
        #expect(await server.sessions().count == 2)  // the refusal ended nothing
        try await server.endSession(number: number)
        let closed = try await alice.awaitClose()
        #expect(closed?.code == 4097)
        #expect(closed?.reason.contains("session-revoked") == true)
        #expect(await server.sessions().map(\.user) == ["bob"])
        await #expect(throws: AdminError.unknownSession(number)) { try await server.endSession(number: number) }
        _ = try await bob.fetch("S", index: 1)  // positive control: bob's session goes on
        await server.stop()
    }

    @Test func anExportImportedElsewhereGivesTheSameStateAndSubscribersSeeIt() async throws {
        let server = try ContrailServer(options: Self.options())
        let writer = ServerTestClient(server: server)
        let watcher = ServerTestClient(server: server)
        try await writer.createSession(params: ["user": "alice"])
        try await watcher.createSession(params: ["user": "bob"])
        try await Self.drawCanvas(writer, scope: "Original")
        let export = try await server.exportScope("Original")
        #expect(export["objects"]?.objectValue?.count == 3)

        let (_, empty) = try await watcher.fetch("Copy", index: 1)
        let copyRoot = try #require(empty["rootUUID"]?.stringValue)
        #expect(!server.scopeExists("Copy"))
        let fragments = try await server.importScope("Copy", state: export)
        #expect(fragments == 3)
        #expect(server.scopeExists("Copy"))  // created, as a first write creates a scope
        let broadcast = try await watcher.next()  // the subscriber sees the import as a change set
        #expect(broadcast["type"] == "ScopeSync")
        #expect(broadcast["fragments"]?.arrayValue?.count == 3)
        let copy = try await server.exportScope("Copy")
        #expect(copy["root"]?.stringValue == copyRoot)  // the scope keeps its root: the import's root becomes it
        #expect(Self.withoutRoot(copy) == Self.withoutRoot(export))
        #expect(try await server.importScope("Copy", state: export) == 0)  // already that state: nothing to do
        await server.stop()
    }

    @Test func importingAnOlderExportBringsTheScopeBackToIt() async throws {
        let server = try ContrailServer(options: Self.options())
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["user": "alice"])
        let root = try await Self.drawCanvas(client, scope: "S")
        let before = try await server.exportScope("S")
        let extra = Wire.uuid()
        let reply = try await client.sync(index: 3, fragments: [
            Wire.fragment("change", root, "Canvas", ["name": "renamed", "shapes": Wire.array([extra]), "note": "new"]),
            Wire.fragment("add", extra, "Shape", ["x": 99]),
        ])
        #expect(reply["fragmentReplies"] == [[:], [:]])
        #expect(comparableState(try await server.exportScope("S")) != comparableState(before))
        _ = try await server.importScope("S", state: before)
        let after = try await server.exportScope("S")
        #expect(comparableState(after) == comparableState(before))  // "note" is null now, the extra shape gone
        #expect(after["objects"]?[extra] == nil)
        await server.stop()
    }

    @Test func hostileImportsAreRefusedAndChangeNothing() async throws {
        let server = try ContrailServer(options: Self.options())
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["user": "alice"])
        let root = try await Self.drawCanvas(client, scope: "S")
        let before = try await server.exportScope("S")
        let missing = Wire.uuid()
        let cases: [(JSON, String)] = [
            (.string("x"), "not a JSON object"),
            (["objects": [:]], "root"),
            (["root": "not-a-uuid", "objects": [:]], "root"),
            (["root": .string(root), "objects": "x"], "objects"),
            (["root": .string(root), "objects": [:]], "root object"),
            (["root": .string(root), "objects": [root: ["clsName": "Canvas", "properties": [:]], "zzz": ["clsName": "A", "properties": [:]]]],
             "UUID key"),
            (["root": .string(root), "objects": [root: ["clsName": "Canvas", "properties": 7]]], "properties"),
        ]
        for (state, text) in cases {
            do {
                _ = try await server.importScope("S", state: state)
                Issue.record("accepted \(state)")
            } catch {
                guard case .invalidState(let reason) = error else { Issue.record("\(error)"); continue }
                #expect(reason.contains(text), "\(reason)")
            }
        }
        // A reference to an object the import does not hold: refused by the scope's own validation.
        let dangling: JSON = ["root": .string(root), "objects": [root: ["clsName": "Canvas", "properties": ["shapes": Wire.array([missing])]]]]
        do {
            _ = try await server.importScope("S", state: dangling)
            Issue.record("a dangling reference was imported")
        } catch {
            guard case .importRejected(let errors) = error else { Issue.record("\(error)"); return }
            #expect(!errors.isEmpty)
        }
        await #expect(throws: AdminError.invalidScopeName(name: "", reason: "Invalid scope name: the name is empty")) {
            try await server.importScope("", state: before)
        }
        await #expect(throws: AdminError.unknownScope("Nope")) { try await server.exportScope("Nope") }
        #expect(try await server.exportScope("S") == before)  // nothing changed
        // Positive control: a well-formed state is imported.
        let valid: JSON = ["root": .string(root), "objects": [root: ["clsName": "Canvas", "properties": ["name": "fine", "shapes": []]]]]
        #expect(try await server.importScope("S", state: valid) > 0)
        #expect(try await server.exportScope("S")["objects"]?.objectValue?.count == 1)
        await server.stop()
    }

    @Test func compactingShrinksTheLogAndKeepsTheState() async throws {
        let data = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try ContrailServer(options: Self.options(data: data))
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["user": "alice"])
        let root = try await Self.drawCanvas(client, scope: "S")
        for index in 3..<43 {
            let reply = try await client.sync(index: index, fragments: [Wire.fragment("change", root, "Canvas", ["name": .string("name \(index)")])])
            #expect(reply["fragmentReplies"] == [[:]])
        }
        let before = try await server.exportScope("S")
        let report = try await server.compactScope("S")
        #expect(report.scope == "S")
        #expect(report.objects == 3)
        #expect(report.bytesAfter < report.bytesBefore)
        let file = data.appending(path: "S.scope").path(percentEncoded: false)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(size == report.bytesAfter)
        await #expect(throws: AdminError.unknownScope("Other")) { try await server.compactScope("Other") }
        await server.stop()
        let restarted = try ContrailServer(options: Self.options(data: data))
        #expect(try await restarted.exportScope("S") == before)
        await restarted.stop()
        // A server in memory has no log to compact.
        let memory = try ContrailServer(options: Self.options())
        await #expect(throws: AdminError.noDataDirectory) { try await memory.compactScope("S") }
        await memory.stop()
    }

    @Test func anAdminsSessionThatAsksIsToldWhoMadeEachChangeSet() async throws {
        var options = Wire.options()
        options.sessionHook = { params, _ in
            guard case .string(let user)? = params["user"] else { return .deny() }
            return .allow(SessionIdentity(user: user, grants: .everything, isAdmin: user == "root"))
        }
        let server = try ContrailServer(options: options)
        let writer = ServerTestClient(server: server)
        let inspector = ServerTestClient(server: server)
        let curious = ServerTestClient(server: server)
        let plain = ServerTestClient(server: server)
        try await writer.createSession(params: ["user": "alice"])
        try await inspector.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": "root", "contrailOrigins": true]])
        let granted = try await inspector.next()
        #expect(granted["extensions"]?.arrayValue?.contains("ScopeSyncOrigin") == true)
        try await curious.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": "bob", "contrailOrigins": true]])
        let refused = try await curious.next()
        #expect(refused["extensions"]?.arrayValue?.contains("ScopeSyncOrigin") == false)  // not an admin: not told
        try await plain.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": "root"]])
        _ = try await plain.next()
        for client in [inspector, curious, plain] { _ = try await client.fetch("S", index: 1) }
        let (_, state) = try await writer.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        _ = try await writer.sync(index: 2, fragments: [Wire.fragment("change", root, "Canvas", ["name": "x"])])
        let number = try #require(await server.sessions().first { $0.user == "alice" }?.number)
        let told = try await inspector.next()
        #expect(told["type"] == "ScopeSync")
        #expect(told["origin"] == ["session": .int(Int64(number)), "user": "alice"])
        for client in [curious, plain] {
            let broadcast = try await client.next()
            #expect(broadcast["type"] == "ScopeSync")
            #expect(broadcast["origin"] == nil)
        }
        await server.stop()
    }

    /// `state` without its root's UUID (the objects by UUID, the root's under "ROOT").
    static func withoutRoot(_ state: JSON) -> JSON {
        guard let root = state["root"]?.stringValue, var objects = state["objects"]?.objectValue else { return state }
        objects["ROOT"] = objects.removeValue(forKey: root)
        return comparableState(.object(objects))
    }
}
