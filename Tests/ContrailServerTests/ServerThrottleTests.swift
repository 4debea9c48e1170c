import Contrail
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// The throttle of failed credentials (issue 22, item 4): failures are answered after a delay that
/// doubles per client address, valid credentials are never delayed or refused, malformed
/// handshakes do not count, and the address is the peer's or, from a trusted proxy, the one its
/// `X-Forwarded-For` names. Delays run in virtual time: a valid client that gets its session
/// without the clock moving was not delayed.
@Suite("Server throttle of failed credentials")
struct ServerThrottleTests {
    private static func createWith(_ token: String) -> JSON {
        ["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["token": .string(token)]]
    }

    private static func options(clock: TestClock, lines: ServerLogLines) -> ServerOptions {
        var options = Wire.options()
        options.sessionHook = { params, _ in params["token"] == "right" }
        options.clock = clock
        options.log = lines.sink
        // Keep-alive and expiry timers far beyond the delays, so the clock's sleepers are the delays.
        options.pingInterval = .seconds(10_000)
        options.sessionExpiry = .seconds(100_000)
        return options
    }

    @Test func failuresAreAnsweredAfterADoublingDelayWhileValidCredentialsAreAnsweredAtOnce() async throws {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Self.options(clock: clock, lines: lines)
        options.failedAttemptDelay = .seconds(1)
        options.maxFailedAttemptDelay = .seconds(4)
        let server = try ContrailServer(options: options)
        for expected in [1, 2, 4, 4] {
            let delay = Duration.seconds(expected)
            let guess = ServerTestClient(server: server, peer: "192.0.2.1")
            try await guess.send(Self.createWith("guess"))
            #expect(await clock.waitForSleepers(1, dueWithin: delay))
            // Positive control for the length: nothing is due a millisecond earlier.
            #expect(clock.sleeperCount(dueWithin: delay - .milliseconds(1)) == 0)
            // Meanwhile a valid client at the same address gets its session at once.
            let valid = ServerTestClient(server: server, peer: "192.0.2.1")
            #expect(try await !valid.createSession(params: ["token": "right"]).isEmpty)
            clock.advance(by: delay)
            #expect(try await guess.next()["error"] == ["message": "Session creation denied"])
            #expect(try await guess.awaitClose()?.code == 4096)
        }
        // Another address starts its own episode at the first delay.
        let other = ServerTestClient(server: server, peer: "192.0.2.2")
        try await other.send(Self.createWith("guess"))
        #expect(await clock.waitForSleepers(1, dueWithin: .seconds(1)))
        clock.advance(by: .seconds(1))
        #expect(try await other.awaitClose()?.code == 4096)
        // An unknown session token is answered at once but counts: the address's next failure
        // waits the second delay.
        let forged = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", String(repeating: "b", count: 64))],
                                      peer: "192.0.2.3")
        #expect(try await forged.awaitClose()?.reason.contains("session-token-unrecognized") == true)
        let afterForged = ServerTestClient(server: server, peer: "192.0.2.3")
        try await afterForged.send(Self.createWith("guess"))
        #expect(await clock.waitForSleepers(1, dueWithin: .seconds(2)))
        #expect(clock.sleeperCount(dueWithin: .seconds(2) - .milliseconds(1)) == 0)
        clock.advance(by: .seconds(2))
        #expect(try await afterForged.awaitClose()?.code == 4096)
        // One line when an episode starts, one when the cap is reached; never the token.
        #expect(await lines.contain("peer 192.0.2.1: connection denied: Session creation denied"))
        #expect(await lines.contain("peer 192.0.2.1: 3 failed attempts; its failed attempts are answered after 4.0 seconds"))
        #expect(await lines.contain("peer 192.0.2.2: connection denied"))
        #expect(lines.all.filter { $0.contains("peer 192.0.2.1") }.count == 2, "\(lines.all)")
        #expect(!lines.all.contains { $0.contains("guess") })
        await server.stop()
    }

    @Test func aSourceHasBoundedWaitingAnswersAndAFloodNeverLocksOutAValidClient() async throws {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Self.options(clock: clock, lines: lines)
        options.maxDelayedAttemptsPerSource = 2
        let server = try ContrailServer(options: options)
        var waiting: [ServerTestClient] = []
        for _ in 0..<2 {
            let guess = ServerTestClient(server: server, peer: "192.0.2.7")
            try await guess.send(Self.createWith("guess"))
            waiting.append(guess)
        }
        #expect(await clock.waitForSleepers(2))
        // Past the bound: answered and closed at once (they hold nothing), without the clock moving.
        for _ in 0..<20 {
            let guess = ServerTestClient(server: server, peer: "192.0.2.7")
            try await guess.send(Self.createWith("guess"))
            #expect(try await guess.next()["error"] == ["message": "Session creation denied"])
            #expect(try await guess.awaitClose()?.code == 4096)
        }
        // Unknown session tokens count too, and are answered at once (a restart or an expiry gives
        // every client one).
        let forged = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", String(repeating: "a", count: 64))], peer: "192.0.2.7")
        #expect(try await forged.awaitClose()?.reason.contains("session-token-unrecognized") == true)
        // A valid client at the flooded address: a session at once.
        #expect(try await !ServerTestClient(server: server, peer: "192.0.2.7").createSession(params: ["token": "right"]).isEmpty)
        #expect(clock.sleeperCount(dueWithin: .seconds(31)) == 2)
        clock.advance(by: .seconds(1))
        for guess in waiting { #expect(try await guess.awaitClose()?.code == 4096) }
        await server.stop()
    }

    @Test func malformedAndSlowHandshakesAreClosedAtOnceAndDoNotCount() async throws {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Self.options(clock: clock, lines: lines)
        options.establishTimeout = .seconds(5)
        let server = try ContrailServer(options: options)
        for garbage in ["not json", #"{"type":"ScopeFetch","index":1,"name":"x","params":{}}"#, "[1,2]"] {
            let client = ServerTestClient(server: server, peer: "192.0.2.9")
            try await client.send(garbage)
            #expect(try await client.awaitClose()?.code == 4096)
        }
        let slow = ServerTestClient(server: server, peer: "192.0.2.9")
        #expect(await clock.waitForSleepers(1, dueWithin: .seconds(5)))
        clock.advance(by: .seconds(5))
        #expect(try await slow.awaitClose()?.code == 4096)
        // None counted: the first real failure of the address starts an episode at the first delay.
        let guess = ServerTestClient(server: server, peer: "192.0.2.9")
        try await guess.send(Self.createWith("guess"))
        #expect(await clock.waitForSleepers(1, dueWithin: .milliseconds(250)))
        #expect(await lines.contain("peer 192.0.2.9: connection denied: Session creation denied"))
        clock.advance(by: .milliseconds(250))
        #expect(try await guess.awaitClose()?.code == 4096)
        await server.stop()
    }

    /// Real sockets from many source addresses: Linux routes all of 127/8 to the loopback
    /// interface, so a client socket bound to 127.0.0.N before connecting is address N to the server.
    @Test func failuresFromManyAddressesCountPerAddressAndAValidClientIsNeverDelayed() async throws {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Self.options(clock: clock, lines: lines)
        options.maxDelayedAttemptsPerSource = 3
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        var waiting: [ServerTestClient] = []
        // A garbage flood from the valid client's own address: closed at once, counts for nothing.
        for _ in 0..<20 {
            let garbage = try await ServerTestClient.connect(port: port, from: "127.0.0.1")
            try await garbage.send("garbage")
            #expect(try await garbage.awaitClose()?.code == 4096)
        }
        for host in 2...21 {
            for _ in 0..<4 {
                let guess = try await ServerTestClient.connect(port: port, from: "127.0.0.\(host)")
                try await guess.send(Self.createWith("guess"))
                waiting.append(guess)
            }
        }
        // Each address has its own episode, and the valid client, from the flooded addresses and
        // from 127.0.0.1, gets its session with the clock standing still.
        for host in [1, 2, 11, 21] {
            let valid = try await ServerTestClient.connect(port: port, from: "127.0.0.\(host)")
            #expect(try await !valid.createSession(params: ["token": "right"]).isEmpty)
        }
        for host in 2...21 { #expect(await lines.contain("peer 127.0.0.\(host): connection denied")) }
        #expect(await lines.contain("created from 127.0.0.11"))
        // Three answers wait per address (the fourth was answered at once): 60 sleepers.
        #expect(await clock.waitForSleepers(60, dueWithin: .seconds(1)))
        clock.advance(by: .seconds(1))
        for guess in waiting { #expect(try await guess.awaitClose()?.code == 4096) }
        #expect(!lines.all.contains { $0.contains("peer 127.0.0.1:") })
        await server.stop()
    }

    /// A simulated proxy: a peer at a trusted address that sends `X-Forwarded-For`.
    @Test func aTrustedProxysForwardedAddressIsTheClientAndAnyOtherPeersIsIgnored() async throws {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Self.options(clock: clock, lines: lines)
        options.trustedProxies = [try #require(AddressRange("127.0.0.9")), try #require(AddressRange("10.0.0.0/8"))]
        options.maxDelayedAttemptsPerSource = 2
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        // Through the proxy (which appends the address it saw): the rightmost untrusted entry.
        let forwarded = [("X-Forwarded-For", "198.51.100.1, 203.0.113.5"), ("X-Forwarded-For", "10.2.3.4")]
        let viaProxy = try await ServerTestClient.connect(port: port, headers: forwarded, from: "127.0.0.9")
        try await viaProxy.createSession(params: ["token": "right"])
        #expect(await lines.contain("created from 203.0.113.5"))
        // An untrusted peer's X-Forwarded-For is ignored.
        let direct = try await ServerTestClient.connect(port: port, headers: [("X-Forwarded-For", "203.0.113.77")], from: "127.0.0.10")
        try await direct.createSession(params: ["token": "right"])
        #expect(await lines.contain("created from 127.0.0.10"))
        // A flood of failures through the proxy, for one client and for many: each counts against
        // its forwarded address, and valid clients through the proxy are never delayed.
        var waiting: [ServerTestClient] = []
        for attacker in ["203.0.113.66", "203.0.113.66", "203.0.113.66", "198.51.100.20", "198.51.100.21"] {
            let guess = try await ServerTestClient.connect(port: port, headers: [("X-Forwarded-For", attacker)], from: "127.0.0.9")
            try await guess.send(Self.createWith("guess"))
            waiting.append(guess)
        }
        for client in ["203.0.113.66", "203.0.113.5", "192.0.2.44"] {
            let valid = try await ServerTestClient.connect(port: port, headers: [("X-Forwarded-For", client)], from: "127.0.0.9")
            #expect(try await !valid.createSession(params: ["token": "right"]).isEmpty)
        }
        for attacker in ["203.0.113.66", "198.51.100.20", "198.51.100.21"] {
            #expect(await lines.contain("peer \(attacker): connection denied"))
        }
        #expect(!lines.all.contains { $0.contains("peer 127.0.0.9") })
        // 203.0.113.66 has two waiting (its bound), its third answered at once; one each for the others.
        #expect(await clock.waitForSleepers(4, dueWithin: .seconds(1)))
        clock.advance(by: .seconds(1))
        for guess in waiting { #expect(try await guess.awaitClose()?.code == 4096) }
        await server.stop()
    }
}

/// The same through `contrail serve`'s flags, in a child process.
@Suite("contrail serve admission flags")
struct ServeAdmissionFlagTests {
    @Test func trustedProxyAndScopeCreationFlagsReachTheServer() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-admission-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await ServerProcess(data: directory, arguments: [
            "--trusted-proxy", "127.0.0.9", "--create-scopes", "declared", "--scope", "Known", "--max-scopes", "5",
            "--failure-delay", "0.1", "--max-failure-delay", "1",
        ])
        let viaProxy = try await ServerTestClient.connect(port: server.port, headers: [("X-Forwarded-For", "203.0.113.5")], from: "127.0.0.9")
        try await viaProxy.createSession()
        #expect(try await server.logs("created from 203.0.113.5"))
        try await viaProxy.send(["type": "ScopeFetch", "index": 1, "name": "Other", "params": [:]])
        #expect(try await viaProxy.next()["error"]?["type"] == "scope-not-found")
        #expect(try await viaProxy.fetch("Known", index: 2).0["error"] == nil)
        // Positive control for the proxy: a peer that is not trusted is its own address.
        let direct = try await ServerTestClient.connect(port: server.port, headers: [("X-Forwarded-For", "203.0.113.6")], from: "127.0.0.8")
        try await direct.createSession()
        #expect(try await server.logs("created from 127.0.0.8"))
        try await server.kill()
    }

    @Test func badAdmissionFlagsAreUsageErrors() async throws {
        for arguments in [["--trusted-proxy", "10.0.0.0/33"], ["--create-scopes", "sometimes"], ["--max-scopes", "-1"]] {
            let child = try ChildProcess(ServerProcess.executable, ["serve", "--port", "0"] + arguments)
            #expect(await child.waitForExit(timeout: .seconds(60)))
            #expect(child.termination != nil && child.termination != .exited(0), "\(arguments)")
            await child.kill()
        }
    }
}
