import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// `/api/admin/…` over HTTP and `contrail admin` against it (issue 28): deny by default, the
/// admin credential checked as `/api/overview` checks it, hostile requests answered with errors.
@Suite("Admin over HTTP")
struct AdminHTTPTests {
    /// Tokens: "root" (the shared token: every scope, admin), "reader" (not an admin), "limited"
    /// (an admin who may read "pub-*" only).
    static func start(backups: URL? = nil, data: URL? = nil) async throws -> (ContrailServer, UInt16) {
        try await startPageServer { options in
            options.dataDirectory = data
            options.backupDirectory = backups
            options.sessionHook = { params, _ in
                switch params["token"]?.stringValue {
                case "root": .allowEverything
                case "reader": .allow(SessionIdentity(user: "reader", grants: .everything))
                case "limited": .allow(SessionIdentity(user: "limited", grants: ["pub-*": .read], isAdmin: true))
                default: .deny()
                }
            }
        }
    }

    static func call(_ port: UInt16, _ method: String, _ path: String, token: String? = "root", body: [UInt8] = [],
                     extraHeaders: String? = nil, endingInput: Bool = false) async throws -> (Int, JSON?) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        head += extraHeaders ?? "Content-Length: \(body.count)\r\n"
        head += "\r\n"
        let response = try await PagesHTTP.exchange(port: port, bytes: Array(head.utf8) + body, endingInput: endingInput)
        return (response.status, try? JSON(parsing: response.body))
    }

    @Test func everyRouteNeedsAnAdminsCredential() async throws {
        let (server, port) = try await Self.start()
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["token": "root"])
        _ = try await client.fetch("pub-1", index: 1)
        let routes = [("GET", "/api/admin/sessions"), ("GET", "/api/admin/scopes"), ("POST", "/api/admin/sessions/1/end"),
                      ("POST", "/api/admin/users/x/end"), ("GET", "/api/admin/scopes/pub-1/export"),
                      ("POST", "/api/admin/scopes/pub-1/compact"), ("POST", "/api/admin/backup")]
        for (method, path) in routes {
            #expect(try await Self.call(port, method, path, token: nil).0 == 401, "\(path)")
            #expect(try await Self.call(port, method, path, token: "wrong").0 == 403, "\(path)")
            #expect(try await Self.call(port, method, path, token: "reader").0 == 403, "\(path)")
        }
        #expect(await server.sessions().count == 1)  // none of them ended anything
        // Positive control: the admin's token.
        let (status, sessions) = try await Self.call(port, "GET", "/api/admin/sessions")
        #expect(status == 200)
        #expect(sessions?["sessions"]?[0]?["scopes"] == ["pub-1"])
        #expect(sessions?["sessions"]?[0]?["number"]?.int64Value == 1)
        // An admin limited to some scopes sees and exports only those.
        let (_, scopes) = try await Self.call(port, "GET", "/api/admin/scopes", token: "limited")
        #expect(scopes?["scopes"]?.arrayValue?.isEmpty == true)  // pub-1 was only fetched: it does not exist yet
        #expect(try await Self.call(port, "GET", "/api/admin/scopes/secret/export", token: "limited").0 == 403)
        #expect(try await Self.call(port, "GET", "/api/admin/scopes/pub-1/export", token: "limited").0 == 404)
        await server.stop()

        // A server without authentication has no admin API at all (deny by default).
        let (open, openPort) = try await startPageServer()
        let (refused, body) = try await Self.call(openPort, "GET", "/api/admin/sessions", token: nil)
        #expect(refused == 403)
        #expect(body?["error"]?.stringValue?.contains("authentication") == true)
        #expect(try await PagesHTTP.request(port: openPort, path: "/api/overview").status == 200)  // the overview stays open
        await open.stop()
    }

    @Test func actionsAnswerWithTheirOutcomeAndHostileRequestsWithErrors() async throws {
        let backups = AdminTests.temporaryDirectory()
        let data = AdminTests.temporaryDirectory()
        defer { for url in [backups, data] { try? FileManager.default.removeItem(at: url) } }
        let (server, port) = try await Self.start(backups: backups, data: data)
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["token": "root"])
        try await AdminTests.drawCanvas(client, scope: "a/b c")
        let name = "a%2Fb%20c"

        let (exported, state) = try await Self.call(port, "GET", "/api/admin/scopes/\(name)/export")
        #expect(exported == 200)
        #expect(state?["objects"]?.objectValue?.count == 3)
        let body = try #require(state).serialized()
        let (imported, result) = try await Self.call(port, "POST", "/api/admin/scopes/copy/import", body: body)
        #expect(imported == 200)
        #expect(result?["fragments"]?.int64Value == 3)
        #expect(AdminTests.withoutRoot(try await server.exportScope("copy")) == AdminTests.withoutRoot(try #require(state)))
        let (compacted, report) = try await Self.call(port, "POST", "/api/admin/scopes/copy/compact")
        #expect(compacted == 200)
        #expect(report?["objects"]?.int64Value == 3)
        let (backedUp, manifest) = try await Self.call(port, "POST", "/api/admin/backup", body: Array(#"{"name":"nightly"}"#.utf8))
        #expect(backedUp == 200)
        #expect(manifest?["scopes"]?.arrayValue?.count == 2)
        #expect(FileManager.default.fileExists(atPath: backups.appending(path: "nightly/backup.json").path(percentEncoded: false)))
        let (listed, scopes) = try await Self.call(port, "GET", "/api/admin/scopes")
        #expect(listed == 200)
        #expect(scopes?["scopes"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["a/b c", "copy"])

        // Hostile and mistaken requests: typed errors, nothing changed.
        let cases: [(String, String, [UInt8], String?, Int)] = [
            ("GET", "/api/admin/scopes/nope/export", [], nil, 404),
            ("POST", "/api/admin/sessions/999/end", [], nil, 404),
            ("POST", "/api/admin/sessions/x/end", [], nil, 404),
            ("GET", "/api/admin/whatever", [], nil, 404),
            ("DELETE", "/api/admin/sessions", [], nil, 405),
            ("GET", "/api/admin/scopes/%ZZ/export", [], nil, 400),
            ("POST", "/api/admin/users/eve%0Asession%201%20ended/end", [], nil, 400),  // no forged log lines
            ("POST", "/api/admin/scopes/copy/import", Array("{not json".utf8), nil, 400),
            ("POST", "/api/admin/scopes/copy/import", Array(#"{"root":"x"}"#.utf8), nil, 400),
            ("POST", "/api/admin/backup", Array(#"{"name":"../escape"}"#.utf8), nil, 400),
            ("POST", "/api/admin/backup", Array(#"{"name":"nightly"}"#.utf8), nil, 409),
            ("POST", "/api/admin/scopes/copy/import", [], "Transfer-Encoding: chunked\r\n", 411),
            ("POST", "/api/admin/scopes/copy/import", [], "Content-Length: 99999999999\r\n", 413),
            ("POST", "/api/admin/scopes/copy/import", [], "Content-Length: -5\r\n", 400),
        ]
        for (method, path, body, headers, expected) in cases {
            let (status, answer) = try await Self.call(port, method, path, body: body, extraHeaders: headers)
            #expect(status == expected, "\(method) \(path): \(status) \(String(describing: answer))")
        }
        #expect(!FileManager.default.fileExists(atPath: backups.deletingLastPathComponent().appending(path: "escape").path(percentEncoded: false)))
        #expect(AdminTests.withoutRoot(try await server.exportScope("copy")) == AdminTests.withoutRoot(try #require(state)))
        // Ending a session over HTTP, and all of a user's.
        let (ended, _) = try await Self.call(port, "POST", "/api/admin/sessions/1/end")
        #expect(ended == 200)
        #expect(try await client.awaitClose()?.code == 4097)
        let (users, count) = try await Self.call(port, "POST", "/api/admin/users/nobody/end")
        #expect(users == 200)
        #expect(count?["ended"]?.int64Value == 0)
        await server.stop()

        // Without a backup directory, backups over HTTP are refused.
        let (noBackups, noBackupsPort) = try await Self.start(data: data.appending(path: "second"))
        #expect(try await Self.call(noBackupsPort, "POST", "/api/admin/backup").0 == 409)
        await noBackups.stop()
    }

    @Test func aBodyIsReadOnlyOnceTheCredentialChecksOut() async throws {
        let (server, port) = try await Self.start()
        defer { Task { await server.stop() } }
        // 100 KB announced and never sent: the answer comes from the head alone. A server that read
        // the body first would wait for it and close at its handshake timeout without an answer.
        let announced = "Content-Length: 100000\r\n"
        let path = "/api/admin/scopes/gated/import"
        #expect(try await Self.call(port, "POST", path, token: nil, extraHeaders: announced).0 == 401)
        #expect(try await Self.call(port, "POST", path, token: "wrong", extraHeaders: announced).0 == 403)
        #expect(try await Self.call(port, "POST", path, token: "reader", extraHeaders: announced).0 == 403)
        // No page or operations route takes a body: answered from the head, whatever the credential.
        #expect(try await Self.call(port, "POST", "/demo", extraHeaders: announced).0 == 405)
        #expect(try await Self.call(port, "POST", "/healthz", extraHeaders: announced).0 == 405)
        #expect(!server.scopeExists("gated"))
        // Positive control: the admin's credential lets the body in, and the import happens.
        let root = UUID().uuidString.lowercased()
        let body = JSON.object(["root": .string(root), "objects": [root: ["clsName": "Canvas", "properties": ["title": "gated"]]]]).serialized()
        let (importStatus, importAnswer) = try await Self.call(port, "POST", path, body: body)
        #expect(importStatus == 200, "\(String(describing: importAnswer))")
        #expect(server.scopeExists("gated"))
    }

    @Test func aLargeBodyArrivingInManyReadsIsImportedWhole() async throws {
        let (server, port) = try await Self.start()
        let root = UUID().uuidString.lowercased()
        var objects: [String: JSON] = [:]
        var ids: [JSON] = []
        for index in 0..<5_000 {
            let id = UUID().uuidString.lowercased()
            ids.append(.string(id))
            objects[id] = ["clsName": "Shape", "properties": ["x": .int(Int64(index)), "label": .string(String(repeating: "l", count: 60))]]
        }
        objects[root] = ["clsName": "Canvas", "properties": ["shapes": .array(ids)]]
        let body = JSON.object(["root": .string(root), "objects": .object(objects)]).serialized()
        #expect(body.count > 500_000)  // many TCP reads on the server's side
        let (status, answer) = try await Self.call(port, "POST", "/api/admin/scopes/big/import", body: body)
        #expect(status == 200, "\(String(describing: answer))")
        #expect(answer?["fragments"]?.int64Value == 5_001)
        #expect(try await server.exportScope("big")["objects"]?.objectValue?.count == 5_001)
        // A body that stops short of its Content-Length (the client ends its input there) is never
        // answered as if whole.
        do {
            let (short, _) = try await Self.call(port, "POST", "/api/admin/scopes/short/import", body: Array(body.prefix(1000)),
                                                  extraHeaders: "Content-Length: \(body.count)\r\n", endingInput: true)
            #expect(short != 200)
        } catch {
            // Closed without an answer.
        }
        #expect(!server.scopeExists("short"))
        await server.stop()
    }

    @Test func contrailAdminTalksToTheServerWithACredentialFromTheEnvironmentOrAFile() async throws {
        let executable = try ServerProcess.executable.path(percentEncoded: false)
        let backups = AdminTests.temporaryDirectory()
        let data = AdminTests.temporaryDirectory()
        let restored = AdminTests.temporaryDirectory().appending(path: "restored")
        defer { for url in [backups, data, restored.deletingLastPathComponent()] { try? FileManager.default.removeItem(at: url) } }
        let (server, port) = try await Self.start(backups: backups, data: data)
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["token": "root"])
        try await AdminTests.drawCanvas(client, scope: "board")
        let url = "http://127.0.0.1:\(port)"
        let environment: [String: String?] = ["CONTRAIL_ADMIN_TOKEN": "root"]

        let sessions = try await runChild(executable, ["admin", "--server", url, "sessions"], environment: environment, timeout: .seconds(120))
        #expect(sessions.status == 0, "\(sessions.output)")
        #expect(sessions.output.contains("in-process"))
        #expect(sessions.output.contains("board"))
        let export = backups.appending(path: "board.json").path(percentEncoded: false)
        let exported = try await runChild(executable, ["admin", "--server", url, "export", "board", export], environment: environment, timeout: .seconds(120))
        #expect(exported.status == 0, "\(exported.output)")
        let tokenFile = backups.appending(path: "token").path(percentEncoded: false)
        try Data("root\n".utf8).write(to: URL(filePath: tokenFile))
        let imported = try await runChild(executable, ["admin", "--server", url, "--token-file", tokenFile, "import", "board2", export], timeout: .seconds(120))
        #expect(imported.status == 0, "\(imported.output)")
        #expect(AdminTests.withoutRoot(try await server.exportScope("board2")) == AdminTests.withoutRoot(try await server.exportScope("board")))
        let backup = try await runChild(executable, ["admin", "--server", url, "backup", "cli"], environment: environment, timeout: .seconds(120))
        #expect(backup.status == 0, "\(backup.output)")
        let restore = try await runChild(executable, ["admin", "restore", backups.appending(path: "cli").path(percentEncoded: false),
                                                      "--data", restored.path(percentEncoded: false)], timeout: .seconds(120))
        #expect(restore.status == 0, "\(restore.output)")
        #expect(FileManager.default.fileExists(atPath: restored.appending(path: "board2.scope").path(percentEncoded: false)))

        // Refusals: no credential, a wrong one, one on the command line.
        let none = try await runChild(executable, ["admin", "--server", url, "sessions"], environment: ["CONTRAIL_ADMIN_TOKEN": nil, "CONTRAIL_TOKEN": nil], timeout: .seconds(120))
        #expect(none.status == 2)
        #expect(none.output.contains("no admin credential"))
        let wrong = try await runChild(executable, ["admin", "--server", url, "sessions"], environment: ["CONTRAIL_ADMIN_TOKEN": "reader"], timeout: .seconds(120))
        #expect(wrong.status == 1)
        #expect(wrong.output.contains("403"))
        let argv = try await runChild(executable, ["admin", "--server", url, "--token", "root", "sessions"], timeout: .seconds(120))
        #expect(argv.status == 2)
        await server.stop()
    }
}
