import Contrail
import ContrailTestSupport
import Foundation
import Testing

/// `contrail serve --jwt-key` in a child process, over loopback WebSockets and HTTP (issue 22): tokens
/// from SessionCreate params and the Authorization header, grants enforced, refusals with their
/// reason (and never the token) in the reply and the log, the overview for admins only.
@Suite("contrail serve --jwt-key", .serialized)
struct ServeJWTTests {
    @Test func grantsFromTokensAreEnforcedAndTheOverviewNeedsAnAdmin() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        let data = keys.directory.appending(path: "data")
        let server = try await ServerProcess(data: data, arguments: ["--jwt-key", keys.ecPublic.path(percentEncoded: false)])
        defer { Task { try? await server.kill() } }

        let aliceToken = try await keys.token(user: "alice", scopes: ["board": "r", "notes-alice": "rw"])
        let alice = try await ServerTestClient.connect(port: server.port)
        try await alice.createSession(params: ["token": .string(aliceToken)])
        // Bob's token travels in the upgrade's Authorization header instead.
        let bobToken = try await keys.token(user: "bob", scopes: ["board": "rw"], signing: .es256)
        let bob = try await ServerTestClient.connect(port: server.port, headers: [("Authorization", "Bearer \(bobToken)")])
        try await bob.createSession()

        let (_, board) = try await alice.fetch("board", index: 1)
        let root = try #require(board["rootUUID"]?.stringValue)
        try await alice.send(["type": "ScopeFetch", "index": 2, "name": "secret", "params": [:]])
        let denied = try await alice.next()
        #expect(denied["error"]?["type"] == "forbidden")
        #expect(denied["scopeIndex"] == nil)
        _ = try await bob.fetch("board", index: 1)
        #expect(try await bob.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["by": "bob"])])["fragmentReplies"] == [[:]])
        let broadcast = try await alice.next()
        #expect(broadcast["type"] == "ScopeSync" && broadcast["fragments"]?[0]?["properties"]?["by"] == "bob", "a reader gets the broadcast")
        let rejected = try await alice.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["by": "alice"])])
        #expect(rejected["fragmentReplies"]?[0]?["error"]?["type"] == "forbidden")
        let (_, notes) = try await alice.fetch("notes-alice", index: 4)
        let notesRoot = try #require(notes["rootUUID"]?.stringValue)
        #expect(try await alice.sync(index: 5, scopeIndex: 1, fragments: [Wire.fragment("change", notesRoot, "Root", ["by": "alice"])])["fragmentReplies"] == [[:]])

        // Refused tokens: the reason reaches the client and the log, the token reaches neither log nor reply.
        let expired = try await keys.token(user: "alice", scopes: ["board": "r"], exp: Date().addingTimeInterval(-120))
        let unsigned = try await keys.token(["sub": "mallory", "scopes": ["*": "rw"]], signing: .unsigned)
        for (token, reason) in [(expired, "token has expired"), (unsigned, "token algorithm 'none' is not accepted")] {
            let client = try await ServerTestClient.connect(port: server.port)
            try await client.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["token": .string(token)]])
            let reply = try await client.next()
            #expect(reply["error"]?["type"] == "session-creation-denied")
            #expect(reply["error"]?["message"]?.stringValue?.contains(reason) == true, "\(reply)")
            #expect(try await client.awaitClose()?.code == 4096)
        }
        #expect(try await server.logs("token has expired"))
        #expect(!server.log.contains(expired) && !server.log.contains(aliceToken) && !server.log.contains(bobToken))

        // The overview: no token 401, a user's 403, an admin's 200 with only what it may read.
        let adminToken = try await keys.token(user: "ops", scopes: ["board": "r"], admin: true)
        #expect(try await PagesHTTP.request(port: server.port, path: "/api/overview").status == 401)
        #expect(try await PagesHTTP.request(port: server.port, path: "/api/overview",
                                            extraHeaders: "Authorization: Bearer \(aliceToken)\r\n").status == 403)
        let overview = try await PagesHTTP.request(port: server.port, path: "/api/overview",
                                                   extraHeaders: "Authorization: Bearer \(adminToken)\r\n")
        #expect(overview.status == 200)
        let names = try JSON(parsing: overview.text)["scopes"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == ["board"], "notes-alice exists but the admin token may not read it")
        // The pages themselves stay reachable (they hold no data).
        #expect(try await PagesHTTP.request(port: server.port, path: "/").status == 200)
    }
}
