import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Sessions whose clients went away (`ServerOptions.maxWaitingSessionBytes`), in virtual time.
@Suite("Sessions waiting for their clients")
struct WaitingSessionTests {
    /// A server on a test clock whose waiting sessions may hold two empty sessions' worth, never
    /// three; sessions do not expire and no ping comes within a test (the ticker ticks every 125 s).
    static func server() throws -> (ContrailServer, TestClock, ServerLogLines) {
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = Wire.options()
        options.clock = clock
        options.log = lines.sink
        options.sessionExpiry = .seconds(100_000)
        options.pingInterval = .seconds(1_000)
        options.maxWaitingSessionBytes = 2 * (8 << 10) + 100
        return (try ContrailServer(options: options), clock, lines)
    }

    /// Three sessions leave one after another; the waiting ones may hold two sessions' worth: the one
    /// that has waited longest ends (its token is forgotten), the two others still resume.
    @Test func theLongestWaitingSessionEndsWhenTheBoundIsPassed() async throws {
        let (server, clock, lines) = try Self.server()
        var tokens: [String] = []
        for _ in 0..<3 {
            let client = ServerTestClient(server: server)
            tokens.append(try await client.createSession())
            clock.advance(by: .seconds(1))  // each one's last message a second after the previous one's
            await client.transport.close(code: 1006, reason: "network gone")
        }
        #expect(await clock.waitForSleepers(1))  // the ticker
        // Positive control: while fewer than three have been let go by the server, nothing ends; tick
        // until all three wait and the bound ends one.
        var ticks = 0
        while !lines.all.contains(where: { $0.contains("waiting for their clients ended") }), ticks < 200 {
            clock.advance(by: .seconds(125))
            #expect(await clock.waitForSleepers(1))
            ticks += 1
        }
        let ended = lines.all.filter { $0.contains("waiting for their clients ended") }
        #expect(ended.count == 1 && ended.first?.hasPrefix("1 sessions") == true, "\(ended)")
        #expect(await lines.contain("session 1 ended: The server holds too many sessions waiting"))
        // The longest-waiting session is gone; the other two resume.
        let first = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", tokens[0])])
        #expect(try await first.awaitClose()?.code == 4096)
        for token in tokens.dropFirst() {
            let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token)])
            try await resumed.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":true}"#)
            let ping = try await resumed.next()
            #expect(ping["type"] == "Ping" && ping["resendMissing"] == true)
        }
        await server.stop()
    }

    /// A connected session is never counted as waiting: three connected sessions under the same bound
    /// all stay.
    @Test func connectedSessionsDoNotCountAgainstTheBound() async throws {
        let (server, clock, lines) = try Self.server()
        var clients: [ServerTestClient] = []
        for _ in 0..<3 {
            let client = ServerTestClient(server: server)
            try await client.createSession()
            clients.append(client)
        }
        #expect(await clock.waitForSleepers(1))
        for _ in 0..<4 {
            clock.advance(by: .seconds(1_000))  // pings come: each session is still attached
            #expect(await clock.waitForSleepers(1))
        }
        for client in clients {
            try await client.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":true}"#)
            var message = try await client.next()
            while message["type"] == "Ping", message["resendMissing"] == false { message = try await client.next() }
            #expect(message["type"] == "Ping" && message["resendMissing"] == true)
        }
        #expect(!lines.all.contains { $0.contains("waiting for their clients ended") })
        await server.stop()
    }
}
