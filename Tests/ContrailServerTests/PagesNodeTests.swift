import Contrail
import ContrailServer
import Foundation
import Testing

/// The JavaScript client's protocol behaviour under Node against a real server: session, fetch,
/// change sets with replies, pending keys, collection merges, atomic rejection, resume with resend,
/// acknowledgements, removal (Tests/JS/protocol-test.mjs). Both replicas must end equal to the server.
@Suite struct PagesNodeTests {
    static let node = executableOnPath("node")

    @Test(.enabled(if: node != nil, "needs Node.js (`node` on PATH) to run Tests/JS/protocol-test.mjs"))
    func javaScriptClientSpeaksTheProtocol() async throws {
        let node = try #require(Self.node)
        let (server, port) = try await startPageServer(pingInterval: .milliseconds(200))
        defer { Task { await server.stop() } }
        // The client under test is the one the server serves.
        let module = try await Self.downloadClient(port: port)
        defer { try? FileManager.default.removeItem(at: module.deletingLastPathComponent()) }
        let scope = "NodeCanvas"
        let result = try await Self.run(node, "protocol-test.mjs", module: module,
                                        ["ws://127.0.0.1:\(port)/", "http://127.0.0.1:\(port)", scope])
        for step in ["merge", "fetch", "early-edit", "add", "pending-key", "merge-inserts", "atomic", "resume", "ack", "remove"] {
            #expect(result.output.contains("ok \(step)\n"), "step \(step):\n\(result.output)")
        }
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("STATE ") })
        let replicas = try JSON(parsing: String(line.dropFirst("STATE ".count)))
        let serverState = try #require(await server.state(ofScope: scope))
        let expected = comparableState(serverState)
        #expect(comparableState(try #require(replicas["a"])) == expected, "replica a equals the server")
        #expect(comparableState(try #require(replicas["b"])) == expected, "replica b equals the server")
        #expect((expected["objects"]?.objectValue?.count ?? 0) == 3, "root and two shapes remain")
    }

    @Test(.enabled(if: node != nil, "needs Node.js (`node` on PATH) to run Tests/JS/expiry-test.mjs"))
    func javaScriptClientStartsANewSessionWhenTheOldOneExpired() async throws {
        let node = try #require(Self.node)
        let (server, port) = try await startPageServer(pingInterval: .milliseconds(200)) { options in
            options.sessionExpiry = .seconds(1)
        }
        defer { Task { await server.stop() } }
        let module = try await Self.downloadClient(port: port)
        defer { try? FileManager.default.removeItem(at: module.deletingLastPathComponent()) }
        let result = try await Self.run(node, "expiry-test.mjs", module: module, ["ws://127.0.0.1:\(port)/", "Expiring"])
        #expect(result.output.contains("ok expiry\n"), "\(result.output)")
        let state = try #require(await server.state(ofScope: "Expiring"))
        let root = try #require(state["root"]?.stringValue)
        #expect(state["objects"]?[root]?["properties"]?["name"] == .string("after-expiry"), "the edit reached the server: \(state.jsonString)")
    }

    /// `/contrail.js` as the server serves it, saved into a fresh temporary folder.
    static func downloadClient(port: UInt16) async throws -> URL {
        let script = try await PagesHTTP.request(port: port, path: "/contrail.js")
        #expect(script.status == 200)
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-js-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let module = directory.appending(path: "contrail.js")
        try Data(script.body).write(to: module)
        return module
    }

    /// Runs `Tests/JS/<script>` under node with the client module and `arguments`; expects exit 0 within 90 s.
    static func run(_ node: String, _ script: String, module: URL, _ arguments: [String]) async throws -> ChildResult {
        let path = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/\(script)")
        let result = try await runChild(node, ["--experimental-websocket", path.path, module.path] + arguments, timeout: .seconds(90))
        #expect(!result.timedOut, "node was killed after 90 s:\n\(result.output)")
        #expect(result.status == 0, "node failed:\n\(result.output)")
        return result
    }
}
