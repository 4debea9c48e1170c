import Contrail
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Authentication you can deploy (issue 8, item 7): a denied SessionCreate closes with 4096 and
/// the reason; the token can come from a file or the environment. The throttle of failed
/// credentials is in `ServerThrottleTests`.
@Suite("Server authentication")
struct ServerAuthTests {
    private static func createWith(_ token: String) -> JSON {
        ["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["token": .string(token)]]
    }

    private func options() -> ServerOptions {
        var options = Wire.options()
        options.sessionHook = { params, _ in params["token"] == "right" }
        return options
    }

    @Test func deniedSessionCreateClosesWith4096AndTheReason() async throws {
        let server = try ContrailServer(options: options())
        let denied = ServerTestClient(server: server)
        try await denied.send(Self.createWith("wrong"))
        #expect(try await denied.next()["error"] == ["message": "Session creation denied"])
        let closed = try await denied.awaitClose()
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("Session creation denied") == true)
        let allowed = ServerTestClient(server: server)
        try await allowed.createSession(params: ["token": "right"])
        await server.stop()
    }

    @Test func tokenComesFromTheEnvironmentOrAFileAndNotTheCommandLine() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-auth-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appending(path: "token")
        try "from-a-file\n".write(to: tokenFile, atomically: true, encoding: .utf8)
        let fromEnvironment = try await ServerProcess(data: directory.appending(path: "a"), environment: ["CONTRAIL_TOKEN": "from-the-env"])
        let fromFile = try await ServerProcess(data: directory.appending(path: "b"), arguments: ["--token-file", tokenFile.path(percentEncoded: false)],
                                               environment: ["CONTRAIL_TOKEN": ""])
        for (server, token) in [(fromEnvironment, "from-the-env"), (fromFile, "from-a-file")] {
            let wrong = try await ServerTestClient.connect(port: server.port)
            try await wrong.send(Self.createWith("nope"))
            #expect(try await wrong.awaitClose(timeout: .seconds(30))?.code == 4096)
            let right = try await ServerTestClient.connect(port: server.port)
            try await right.createSession(params: ["token": .string(token)])
            let commandLine = try String(decoding: Data(contentsOf: URL(filePath: "/proc/\(server.processIdentifier)/cmdline")), as: UTF8.self)
            #expect(!commandLine.contains(token))
            try await server.kill()
        }
    }
}
