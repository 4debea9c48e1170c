import Contrail
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// A scope's history on the server (issue 26, item 3; Protocol §8.26): change sets numbered and
/// stamped, kept across compaction for the retention period (trimmed on an injected wall clock),
/// the state at any point equal to the one the scope had then, restore as one change set a live
/// client receives, named revisions, the admin routes' refusals, and the CLI against a child server.
@Suite("Scope history")
struct ScopeHistoryTests {
    /// A wall clock the test moves.
    final class WallClock: Sendable {
        private let date = SanitizerVisibleMutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { date.withLock { $0 } }
        func advance(days: Double) { date.withLock { $0.addTimeInterval(days * 86_400) } }
    }

    static func options(data: URL, retention: Duration? = .seconds(30 * 86_400), clock: WallClock? = nil) -> ServerOptions {
        var options = AdminTests.options(data: data)
        options.historyRetention = retention
        if let clock { options.wallClock = { clock.now } }
        return options
    }

    /// Changes the x of shape `uuid` (scope index 0).
    static func move(_ client: ServerTestClient, index: Int, shape: String, x: Int) async throws {
        let reply = try await client.sync(index: index, fragments: [Wire.fragment("change", shape, "Shape", ["x": .int(Int64(x))])])
        #expect(reply["fragmentReplies"] == [[:]])
    }

    /// The shapes' UUIDs of a canvas drawn by ``AdminTests/drawCanvas(_:scope:index:scopeIndex:)``.
    static func shapes(_ server: ContrailServer, _ scope: String) async throws -> [String] {
        let state = try await server.exportScope(scope)
        let root = try #require(state["root"]?.stringValue)
        return (state["objects"]?[root]?["properties"]?["shapes"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    /// A server on `data` (a 30-day retention) with alice's session and a canvas drawn in scope "S"
    /// (change set 1), and the canvas's first shape.
    static func startCanvas(data: URL, clock: WallClock? = nil) async throws -> (ContrailServer, ServerTestClient, String) {
        let server = try ContrailServer(options: options(data: data, clock: clock))
        let alice = ServerTestClient(server: server)
        try await alice.createSession(params: ["user": "alice"])
        try await AdminTests.drawCanvas(alice, scope: "S")
        return (server, alice, try #require(try await shapes(server, "S").first))
    }

    @Test func everyPointReplaysToTheStateTheScopeHadThenAcrossCompactions() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let clock = WallClock()
        let (server, alice, shape) = try await Self.startCanvas(data: data, clock: clock)
        // The state after each change set, as the scope exported it then: the independent record.
        var states = [1: try await server.exportScope("S")]
        for step in 2...7 {
            clock.advance(days: 1)
            try await Self.move(alice, index: step + 1, shape: shape, x: step * 100)
            states[step] = try await server.exportScope("S")
            if step == 3 || step == 5 { _ = try await server.compactScope("S") }  // history segments 1...3, 3...5
        }
        let history = try await server.history(of: "S")
        #expect(history.entries.map(\.sequence) == Array(1...7))
        #expect(history.oldest == 0)
        #expect(history.latest == 7)
        #expect(history.entries.allSatisfy { $0.user == "alice" })
        #expect(history.entries[1].time == Date(timeIntervalSince1970: 1_800_000_000 + 86_400))
        #expect(history.entries[2].fragments == [["type": "change", "uuid": .string(shape), "clsName": "Shape", "properties": ["x": 300]]])
        for (sequence, state) in states {
            let (reached, replayed) = try await server.scopeState("S", at: .sequence(sequence))
            #expect(reached == sequence)
            #expect(replayed == state, "change set \(sequence)")
        }
        #expect(try await server.scopeState("S", at: .sequence(0)).state["objects"]?.objectValue?.count == 1)  // the empty scope
        // A time stands for the last change set at or before it.
        #expect(try await server.scopeState("S", at: .time(Date(timeIntervalSince1970: 1_800_000_000 + 2.5 * 86_400))).sequence == 3)
        #expect(try await server.history(of: "S", since: .sequence(5)).entries.map(\.sequence) == [6, 7])
        await #expect(throws: AdminError.self) { try await server.scopeState("S", at: .sequence(8)) }
        await server.stop()

        // A restart reads the same history (the stop compacted once more: a third segment).
        let again = try ContrailServer(options: Self.options(data: data, clock: clock))
        #expect(try await again.history(of: "S").entries.map(\.sequence) == Array(1...7))
        #expect(try await again.scopeState("S", at: .sequence(4)).state == states[4])
        await again.stop()

        // Without a retention the history is what the log holds: the change sets since the last
        // compaction (the stop's), none here; earlier points are refused.
        let plain = try ContrailServer(options: Self.options(data: data, retention: nil, clock: clock))
        let kept = try await plain.history(of: "S")
        #expect(kept.oldest == 7)
        #expect(try await plain.scopeState("S", at: .sequence(7)).state == states[7])
        await #expect(throws: AdminError.historyUnavailable("change set 2 is no longer kept (the oldest state kept is after 7)")) {
            try await plain.scopeState("S", at: .sequence(2))
        }
        await plain.stop()
    }

    @Test func retentionTrimsSegmentsClosedLongerAgoOnTheWallClock() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let clock = WallClock()
        let (server, alice, shape) = try await Self.startCanvas(data: data, clock: clock)
        try await Self.move(alice, index: 3, shape: shape, x: 1)
        _ = try await server.compactScope("S")   // segment 0...2, closed now
        clock.advance(days: 29)
        try await Self.move(alice, index: 4, shape: shape, x: 2)
        _ = try await server.compactScope("S")   // segment 2...3; 0...2 is 29 days old: kept
        #expect(try await server.scopeState("S", at: .sequence(1)).sequence == 1)  // positive control
        #expect(try await server.history(of: "S").oldest == 0)
        clock.advance(days: 2)
        try await Self.move(alice, index: 5, shape: shape, x: 3)
        _ = try await server.compactScope("S")   // 0...2 is 31 days old: trimmed; 2...3 (2 days) stays
        await #expect(throws: AdminError.self) { try await server.scopeState("S", at: .sequence(1)) }
        let history = try await server.history(of: "S")
        #expect(history.oldest == 2)
        #expect(history.entries.map(\.sequence) == [3, 4])
        #expect(try await server.scopeState("S", at: .sequence(3)).state["objects"]?[shape]?["properties"]?["x"] == 2)
        let segments = try FileManager.default.contentsOfDirectory(atPath: data.appending(path: "S.scope.history").path(percentEncoded: false))
        #expect(segments.count == 2)   // 2...3 and 3...4
        await server.stop()
    }

    @Test func restoreArrivesAtALiveClientAsOneChangeSetAndConverges() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try ContrailServer(options: Self.options(data: data))
        let alice = ServerTestClient(server: server)
        let bob = ServerTestClient(server: server)
        try await alice.createSession(params: ["user": "alice"])
        try await bob.createSession(params: ["user": "bob"])
        let root = try await AdminTests.drawCanvas(alice, scope: "S")
        let before = try await server.exportScope("S")
        let shapes = try await Self.shapes(server, "S")
        _ = try await bob.fetch("S", index: 1)
        // Alice moves one shape, deletes the other and adds a third.
        let added = Wire.uuid()
        let reply = try await alice.sync(index: 3, fragments: [
            Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([shapes[0], added])]),
            Wire.fragment("change", shapes[0], "Shape", ["x": 99]),
            Wire.fragment("add", added, "Shape", ["x": 7, "color": 3]),
        ])
        #expect(reply["fragmentReplies"] == [[:], [:], [:]])
        #expect(try await bob.next()["type"] == "ScopeSync")
        let restored = try await server.restoreScope("S", to: .sequence(1))
        #expect(restored.sequence == 1)
        // Bob gets exactly one ScopeSync: the restore.
        let broadcast = try await bob.next()
        #expect(broadcast["type"] == "ScopeSync")
        let fragments = broadcast["fragments"]?.arrayValue ?? []
        #expect(!fragments.isEmpty && fragments.count <= restored.fragments)
        #expect(fragments.contains { $0["uuid"]?.stringValue == shapes[1] && $0["type"] == "add" })  // the deleted shape is back
        #expect(fragments.contains { $0["uuid"]?.stringValue == root && $0["type"] == "change" })   // in the same change set
        #expect(try await server.exportScope("S") == before)
        let history = try await server.history(of: "S")
        #expect(history.entries.map(\.sequence) == [1, 2, 3])   // nothing rewritten: the restore is change set 3
        #expect(history.entries[2].user == "")
        // Bob's replica, rebuilt from what he received, equals the server's state.
        _ = try await bob.fetch("S", index: 2)
        #expect(try await server.scopeState("S", at: .sequence(3)).state == before)
        // Restoring to where the scope is changes nothing.
        #expect(try await server.restoreScope("S", to: .sequence(3)).fragments == 0)
        await server.stop()
    }

    @Test func revisionsNameAPointForAtAndRestore() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, alice, shape) = try await Self.startCanvas(data: data)
        let marked = try await server.exportScope("S")
        let revision = try await server.markRevision("v1", scope: "S", user: "ops")
        #expect(revision.sequence == 1)
        #expect(revision.user == "ops")
        await #expect(throws: AdminError.revisionExists("v1")) { try await server.markRevision("v1", scope: "S") }
        await #expect(throws: AdminError.self) { try await server.markRevision("42", scope: "S") }
        await #expect(throws: AdminError.self) { try await server.markRevision("", scope: "S") }
        await #expect(throws: AdminError.self) { try await server.markRevision("2026-11-27T08:00:00Z", scope: "S") }
        await #expect(throws: AdminError.self) { try await server.restoreScope("S", to: .sequence(0)) }   // the empty scope has no root to restore
        try await Self.move(alice, index: 3, shape: shape, x: 5)
        _ = try await server.compactScope("S")  // the revision survives compaction
        #expect(try await server.history(of: "S").revisions.map(\.label) == ["v1"])
        #expect(try await server.scopeState("S", at: .revision("v1")).state == marked)
        await #expect(throws: AdminError.unknownRevision("v2")) { try await server.scopeState("S", at: .revision("v2")) }
        #expect(try await server.history(of: "S", since: .revision("v1")).entries.map(\.sequence) == [2])
        #expect(try await server.restoreScope("S", to: .revision("v1")).sequence == 1)
        #expect(try await server.exportScope("S") == marked)
        await server.stop()
        // Marks are in the log: a restart (and a crash before compaction) keeps them.
        let again = try ContrailServer(options: Self.options(data: data))
        #expect(try await again.history(of: "S").revisions.map(\.label) == ["v1"])
        await again.stop()
    }

    @Test func historyRoutesNeedAnAdminCredentialAndTheScopesGrant() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, port) = try await startPageServer { options in
            options.dataDirectory = data
            options.historyRetention = .seconds(86_400)
            options.sessionHook = { params, _ in
                switch params["token"]?.stringValue {
                case "root": .allowEverything
                case "reader": .allow(SessionIdentity(user: "reader", grants: .everything))
                case "viewer": .allow(SessionIdentity(user: "viewer", grants: ["S": .read], isAdmin: true))
                default: .deny()
                }
            }
        }
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["token": "root"])
        try await AdminTests.drawCanvas(client, scope: "S")
        let reads = ["/api/admin/scopes/S/history", "/api/admin/scopes/S/at/1", "/api/overview/scopes/S/history", "/api/overview/scopes/S/at/1"]
        let writes = [("/api/admin/scopes/S/restore", #"{"to":"1"}"#), ("/api/admin/scopes/S/revisions", #"{"label":"v1"}"#)]
        for path in reads {
            #expect(try await AdminHTTPTests.call(port, "GET", path, token: nil).0 == 401, "\(path)")
            #expect(try await AdminHTTPTests.call(port, "GET", path, token: "wrong").0 == 403, "\(path)")
            #expect(try await AdminHTTPTests.call(port, "GET", path, token: "reader").0 == 403, "\(path)")
            #expect(try await AdminHTTPTests.call(port, "GET", path, token: "viewer").0 == 200, "\(path)")  // positive control
        }
        for (path, body) in writes {
            #expect(try await AdminHTTPTests.call(port, "POST", path, token: nil, body: Array(body.utf8)).0 == 401, "\(path)")
            #expect(try await AdminHTTPTests.call(port, "POST", path, token: "viewer", body: Array(body.utf8)).0 == 403, "\(path)")
        }
        #expect(try await server.history(of: "S").revisions.isEmpty)
        #expect(try await server.history(of: "S").entries.count == 1)   // nothing restored
        // Positive control: the admin's credential.
        let (marked, revision) = try await AdminHTTPTests.call(port, "POST", "/api/admin/scopes/S/revisions", body: Array(#"{"label":"v1"}"#.utf8))
        #expect(marked == 200)
        #expect(revision?["label"] == "v1")
        let (status, history) = try await AdminHTTPTests.call(port, "GET", "/api/overview/scopes/S/history", token: "viewer")
        #expect(status == 200)
        #expect(history?["entries"]?[0]?["seq"]?.int64Value == 1)
        #expect(history?["revisions"]?[0]?["label"] == "v1")
        let (restoredStatus, restored) = try await AdminHTTPTests.call(port, "POST", "/api/admin/scopes/S/restore", body: Array(#"{"to":"v1"}"#.utf8))
        #expect(restoredStatus == 200)
        #expect(restored?["seq"]?.int64Value == 1)
        #expect(restored?["fragments"]?.int64Value == 0)   // the scope is at v1 already
        #expect(try await server.history(of: "S").entries.map(\.user) == [""])  // the shared token names no user
        #expect(try await AdminHTTPTests.call(port, "GET", "/api/admin/scopes/S/at/99").0 == 409)
        #expect(try await AdminHTTPTests.call(port, "GET", "/api/admin/scopes/nope/history").0 == 404)
        await server.stop()
    }

    @Test func aKillDuringCompactionsLosesNoHistoryAndTheCLIReadsIt() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let tokenFile = data.appending(path: "token").path(percentEncoded: false)
        try Data("secret-admin\n".utf8).write(to: URL(filePath: tokenFile))
        let arguments = ["--history", "30d", "--token-file", tokenFile]
        var child = try await ServerProcess(data: data.appending(path: "scopes"), arguments: arguments)
        var client = try await ServerTestClient.connect(port: child.port)
        try await client.createSession(params: ["token": "secret-admin"])
        try await AdminTests.drawCanvas(client, scope: "S")
        let shape = try #require(try await Self.shapesOver(port: child.port).first)
        // Rounds of acknowledged (durable) change sets with compactions between them, each round
        // ended by a SIGKILL while a burst of compactions is under way; change set k+1 sets x = k.
        var acknowledged = 1
        for round in 0..<3 {
            if round > 0 {
                child = try await ServerProcess(data: data.appending(path: "scopes"), arguments: arguments)
                client = try await ServerTestClient.connect(port: child.port)
                try await client.createSession(params: ["token": "secret-admin"])
                _ = try await client.fetch("S", index: 1)
            }
            for step in 1...6 {
                try await Self.move(client, index: step + 1 + (round == 0 ? 1 : 0), shape: shape, x: acknowledged)
                acknowledged += 1
                if step.isMultiple(of: 2) {
                    #expect(try await AdminHTTPTests.call(child.port, "POST", "/api/admin/scopes/S/compact", token: "secret-admin").0 == 200)
                }
            }
            let port = child.port
            let burst = (0..<8).map { _ in
                Task { _ = try? await AdminHTTPTests.call(port, "POST", "/api/admin/scopes/S/compact", token: "secret-admin") }
            }
            for _ in 0..<round { _ = try? await AdminHTTPTests.call(port, "POST", "/api/admin/scopes/S/compact", token: "secret-admin") }
            try await child.kill()
            for task in burst { _ = await task.value }
        }
        child = try await ServerProcess(data: data.appending(path: "scopes"), arguments: arguments)
        let url = "http://127.0.0.1:\(child.port)"
        let executable = try ServerProcess.executable.path(percentEncoded: false)
        let environment: [String: String?] = ["CONTRAIL_ADMIN_TOKEN": "secret-admin"]
        let listed = try await runChild(executable, ["scope", "--server", url, "--json", "history", "S"], environment: environment, timeout: .seconds(120))
        #expect(listed.status == 0, "\(listed.output)")
        let history = try #require(ScopeHistory(json: try JSON(parsing: Array(listed.output.utf8))))
        #expect(history.entries.map(\.sequence) == Array(1...acknowledged))
        #expect(history.oldest == 0)
        // Every point replays to x = its step, through the CLI.
        for sequence in [1, 4, 8, 13, acknowledged] {
            let at = try await runChild(executable, ["scope", "--server", url, "--json", "at", "S", "--seq", String(sequence)],
                                        environment: environment, timeout: .seconds(120))
            #expect(at.status == 0, "\(at.output)")
            let state = try JSON(parsing: Array(at.output.utf8))
            #expect(state["state"]?["objects"]?[shape]?["properties"]?["x"]?.int64Value == (sequence == 1 ? 10 : Int64(sequence - 1)), "at \(sequence)")
        }
        let mark = try await runChild(executable, ["scope", "--server", url, "mark", "S", "v1"], environment: environment, timeout: .seconds(120))
        #expect(mark.status == 0, "\(mark.output)")
        #expect(mark.output.contains("marked at change set \(acknowledged)"))
        let restore = try await runChild(executable, ["scope", "--server", url, "restore", "S", "--seq", "4"], environment: environment, timeout: .seconds(120))
        #expect(restore.status == 0, "\(restore.output)")
        let text = try await runChild(executable, ["scope", "--server", url, "history", "S", "--since", "v1"], environment: environment, timeout: .seconds(120))
        #expect(text.status == 0, "\(text.output)")
        #expect(text.output.contains("change Shape"))
        #expect(text.output.contains("1 change set(s) shown"))
        // Refused without a credential and with a wrong one.
        let none = try await runChild(executable, ["scope", "--server", url, "history", "S"],
                                      environment: ["CONTRAIL_ADMIN_TOKEN": nil, "CONTRAIL_TOKEN": nil], timeout: .seconds(120))
        #expect(none.status == 2)
        let wrong = try await runChild(executable, ["scope", "--server", url, "history", "S"], environment: ["CONTRAIL_ADMIN_TOKEN": "nope"],
                                       timeout: .seconds(120))
        #expect(wrong.status == 1)
        #expect(!child.log.contains("secret-admin"))
        try await child.kill()
    }

    @Test func serveTakesAHistoryPeriodOnlyWithADataDirectory() async throws {
        let executable = try ServerProcess.executable.path(percentEncoded: false)
        let memory = try await runChild(executable, ["serve", "--port", "0", "--history", "30d"], timeout: .seconds(120))
        #expect(memory.status == 2)
        #expect(memory.output.contains("--history needs --data"))
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let bad = try await runChild(executable, ["serve", "--port", "0", "--data", data.path(percentEncoded: false), "--history", "30x"],
                                     timeout: .seconds(120))
        #expect(bad.status == 2)
        #expect(bad.output.contains("is not a period"))
        // Positive control: a period with a data directory starts.
        let child = try await ServerProcess(data: data, arguments: ["--history", "12h"])
        try await child.kill()
    }

    /// The shapes of scope "S" on a child server, through the admin export.
    static func shapesOver(port: UInt16) async throws -> [String] {
        let (_, state) = try await AdminHTTPTests.call(port, "GET", "/api/admin/scopes/S/export", token: "secret-admin")
        let root = try #require(state?["root"]?.stringValue)
        return (state?["objects"]?[root]?["properties"]?["shapes"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}

/// The inspector's timeline API through its own module under Node (`inspector-timeline.js`, what the
/// page imports): the history and every state it keeps, read with the admin token, refused without.
@Suite("Inspector timeline")
struct InspectorTimelineTests {
    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH)"))
    func theTimelineModuleReadsEveryPointAsTheServerRebuildsIt() async throws {
        let node = try #require(PagesNodeTests.node)
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, port) = try await startPageServer { options in
            options.dataDirectory = data
            options.historyRetention = .seconds(86_400)
            options.sessionHook = { params, _ in params["token"]?.stringValue == "admin-token" ? .allow(SessionIdentity(user: "ada", grants: .everything, isAdmin: true)) : .deny() }
        }
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["token": "admin-token"])
        try await AdminTests.drawCanvas(client, scope: "T")
        try await server.markRevision("first", scope: "T", user: "ada")
        let shape = try #require(try await ScopeHistoryTests.shapes(server, "T").first)
        try await ScopeHistoryTests.move(client, index: 3, shape: shape, x: 500)
        _ = try await server.compactScope("T")
        try await ScopeHistoryTests.move(client, index: 4, shape: shape, x: 600)
        let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/timeline-check.mjs")
        let result = try await runChild(node, [script.path(percentEncoded: false), "http://127.0.0.1:\(port)", "T", "admin-token"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result.output)")
        let line = try #require(result.output.split(separator: "\n").last(where: { $0.hasPrefix("{") }))
        let read = try JSON(parsing: Array(line.utf8))
        #expect(read["seqs"] == [1, 2, 3])
        #expect(read["users"] == ["ada", "ada", "ada"])
        #expect(read["leadingTo2"] == [2, 1])
        #expect(read["marks"] == ["first"])
        #expect(read["oldest"]?.int64Value == 0)
        for sequence in 0...3 {
            #expect(read["states"]?[String(sequence)] == (try await server.scopeState("T", at: .sequence(sequence)).state), "at \(sequence)")
        }
        #expect(read["states"]?["2"]?["objects"]?[shape]?["properties"]?["x"] == 500)
        #expect(read["lines"]?[0]?.stringValue?.hasPrefix("Canvas ") == true)
        #expect(read["denied"] == 401)
        #expect(read["wrong"] == 403)
        await server.stop()
    }
}

/// Named revisions from a Swift client (`scope.markRevision`, the `MarkRevision` extension) and a
/// restore reaching a live Swift client.
@MainActor
@Suite("Revisions from clients")
struct ClientRevisionTests {
    @Test func aClientMarksARevisionAfterItsOwnEditsAndSeesARestore() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        var options = Wire.options()
        options.dataDirectory = data
        let server = try ContrailServer(options: options)
        let (scope, board) = ClientTests().makeScope()
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        board.title = "first draft"
        board.score = 1
        let sequence = try await scope.markRevision("v1")
        let history = try await server.history(of: "Board")
        #expect(history.revisions.map(\.label) == ["v1"])
        #expect(history.revisions.first?.sequence == sequence)
        #expect(sequence == history.latest)   // the edit made before the call is in it
        #expect(try await server.scopeState("Board", at: .revision("v1")).state["objects"]?[board.uuid.wireString]?["properties"]?["title"] == "first draft")
        // A label in use is refused with a typed error; nothing changes.
        await #expect(throws: SyncError.revisionRefused(WireErrorBody(message: "a revision named 'v1' exists already", type: "revision-exists"))) {
            try await scope.markRevision("v1")
        }
        await #expect(throws: SyncError.self) { try await scope.markRevision("") }
        #expect(try await server.history(of: "Board").revisions.count == 1)
        // A restore reaches the live client like any remote change set, and the replicas converge.
        board.title = "second draft"
        board.score = 3
        try await client.session?.sync(scope)
        _ = try await server.restoreScope("Board", to: .revision("v1"))
        #expect(await eventually { board.title == "first draft" && board.score == 1 })
        #expect(try await server.exportScope("Board")["objects"]?[board.uuid.wireString]?["properties"]?["title"] == "first draft")
        await client.close()
        await server.stop()
    }

    @Test func aServerWithoutHistoryIsNeverSentMarkRevision() async throws {
        let server = try ContrailServer(options: Wire.options())   // in memory: it keeps no history, and says so
        let (scope, board) = ClientTests().makeScope()
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        await #expect(throws: SyncError.extensionUnavailable("MarkRevision")) { try await scope.markRevision("v1") }
        // The session goes on (positive control): an edit still syncs.
        board.title = "still syncing"
        try await client.session?.sync(scope)
        let root = board.uuid.wireString
        #expect(await server.state(ofScope: "Board")?["objects"]?[root]?["properties"]?["title"] == "still syncing")
        // A scope no session syncs cannot be marked.
        let loose = Scope(name: "Loose")
        await #expect(throws: SyncError.notFetched("Loose")) { try await loose.markRevision("v1") }
        await client.close()
        await server.stop()
    }
}
