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
        let script = try await PagesHTTP.request(port: port, path: "/contrail.js")
        #expect(script.status == 200)
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-js-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let module = directory.appending(path: "contrail.js")
        try Data(script.body).write(to: module)
        let test = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "JS/protocol-test.mjs")
        let scope = "NodeCanvas"
        let result = try await runChild(node, ["--experimental-websocket", test.path, module.path,
                                               "ws://127.0.0.1:\(port)/", "http://127.0.0.1:\(port)", scope],
                                        timeout: .seconds(90))
        #expect(!result.timedOut, "node was killed after 90 s:\n\(result.output)")
        #expect(result.status == 0, "node failed:\n\(result.output)")
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
}
