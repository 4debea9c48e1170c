import Contrail
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Authentication you can deploy (issue 8, item 7): a denied SessionCreate closes with 4096 and
/// the reason; failed attempts are rate-limited per peer address and logged once per episode; the
/// token can come from a file or the environment.
@Suite("Server authentication")
struct ServerAuthTests {
    private static func createWith(_ token: String) -> JSON {
        ["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["token": .string(token)]]
    }

    private func options() -> ServerOptions {
        var options = Wire.options()
        options.sessionHook = { params, _ in params["token"] == "right" ? .allowEverything : .deny() }
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

    @Test func failedAttemptsAreRateLimitedPerPeerAndLoggedOncePerEpisode() async throws {
        final class Lines: Sendable {
            let lines = SanitizerVisibleMutex<[String]>([])
        }
        let lines = Lines()
        var options = options()
        options.maxFailedAttempts = 3
        options.log = { line in lines.lines.withLock { $0.append(line) } }
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        for _ in 0..<3 {
            let client = try await ServerTestClient.connect(port: port)
            try await client.send(Self.createWith("guess"))
            #expect(try await client.awaitClose(timeout: .seconds(30))?.code == 4096)
        }
        // Refused now, even with the right token.
        let refused = try await ServerTestClient.connect(port: port)
        try? await refused.send(Self.createWith("right"))  // the server may have closed already
        let closed = try await refused.awaitClose(timeout: .seconds(30))
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("Too many failed attempts") == true)
        // Another peer (in process) is not affected.
        try await ServerTestClient(server: server).createSession(params: ["token": "right"])
        let peerLines = lines.lines.withLock { $0 }.filter { $0.contains("peer 127.0.0.1") }
        #expect(peerLines.count == 2, "\(peerLines)")
        await server.stop()
    }

    /// In virtual time: the throttle reads the server's clock. In-process connections count as one peer.
    @Test func aRefusedPeerMayTryAgainOnceTheWindowHasPassed() async throws {
        let clock = TestClock()
        var options = options()
        options.clock = clock
        options.maxFailedAttempts = 2
        options.failedAttemptWindow = .seconds(60)
        let server = try ContrailServer(options: options)
        for _ in 0..<2 {
            let client = ServerTestClient(server: server)
            try await client.send(Self.createWith("guess"))
            #expect(try await client.awaitClose()?.code == 4096)
        }
        func refusal() async throws -> String? {
            let client = ServerTestClient(server: server)
            let closed = try await client.awaitClose()
            return closed?.reason
        }
        #expect(try await refusal()?.contains("Too many failed attempts; try again in 60 s") == true)
        // Positive control: just before the window has passed, still refused.
        clock.advance(by: .seconds(60) - .milliseconds(1))
        #expect(try await refusal()?.contains("Too many failed attempts; try again in 1 s") == true)
        clock.advance(by: .milliseconds(1))
        let token = try await ServerTestClient(server: server).createSession(params: ["token": "right"])
        #expect(!token.isEmpty)
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
