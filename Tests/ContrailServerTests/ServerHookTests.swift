import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

@Suite("Server hooks")
struct ServerHookTests {
    @Test func deniedSessionIsAnsweredWithTheProtocolError() async throws {
        var options = Wire.options()
        options.sessionHook = { params, _ in params["token"] == "secret" ? .allowEverything : .deny() }
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["token": "wrong"]])
        let reply = try await client.next()
        #expect(reply["type"] == "SessionCreateReply")
        #expect(reply["sessionToken"] == nil)
        #expect(reply["error"] == ["message": "Session creation denied"])
        // Then the connection is closed (4096, with the reason): another try needs a new one.
        let closed = try await client.awaitClose()
        #expect(closed?.code == 4096)
        let token = try await ServerTestClient(server: server).createSession(params: ["token": "secret"])
        #expect(!token.isEmpty)
        await server.stop()
    }

    @Test func deniedFetchCarriesTheHooksError() async throws {
        var options = Wire.options()
        options.fetchHook = { name, _, _ in name == "Secret" ? WireErrorBody(message: "No such scope", type: "not-found") : nil }
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        try await client.send(#"{"type":"ScopeFetch","index":1,"name":"Secret","params":{}}"#)
        let reply = try await client.next()
        #expect(reply["type"] == "ScopeFetchReply")
        #expect(reply["replyTo"] == 1)
        #expect(reply["scopeIndex"] == nil)
        #expect(reply["error"] == ["message": "No such scope", "type": "not-found"])
        // The next fetch is fine and gets scope index 0 (the denied one took none).
        let (ok, _) = try await client.fetch("Open", index: 2)
        #expect(ok["scopeIndex"] == 0)
        await server.stop()
    }

    @Test func connectionHookRunsForNewAndResumingConnections() async throws {
        var options = Wire.options()
        options.connectionHook = { headers in !headers.contains { $0.0.lowercased() == "x-jetstream-block" } }
        let server = try ContrailServer(options: options)
        let blocked = ServerTestClient(server: server, headers: [("X-Jetstream-Block", "1")])
        let closed = try await blocked.awaitClose()
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("rejected") == true)

        let client = ServerTestClient(server: server)
        let token = try await client.createSession()
        let resume = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token), ("x-jetstream-block", "1")])
        #expect(try await resume.awaitClose()?.code == 4096)
        await server.stop()
    }

    @Test func unknownResumeTokenIsClosedWith4096() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server, headers: [("x-jetstream-sessiontoken", "nope")])
        let closed = try await client.awaitClose()
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("session-token-unrecognized") == true)
        await server.stop()
    }

    @Test func handshakeMustBeABareSessionCreate() async throws {
        let server = try ContrailServer(options: Wire.options())
        let array = ServerTestClient(server: server)
        try await array.send(#"[{"type":"SessionCreate","index":0,"version":"0.2.0"}]"#)
        let closed = try await array.awaitClose()
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("unrecognized-handshake") == true)

        let garbage = ServerTestClient(server: server)
        try await garbage.send("{not json")
        #expect(try await garbage.awaitClose()?.code == 4096)
        await server.stop()
    }

    /// In virtual time: both connections' establish timers sleep on the test clock.
    @Test func sessionMustBeEstablishedInTime() async throws {
        let clock = TestClock()
        var options = Wire.options()
        options.clock = clock
        options.establishTimeout = .seconds(10)
        let server = try ContrailServer(options: options)
        let silent = ServerTestClient(server: server)
        let prompt = ServerTestClient(server: server)
        #expect(await clock.waitForSleepers(2))
        // Positive control: a SessionCreate just before the timeout is in time.
        clock.advance(by: .seconds(10) - .milliseconds(1))
        let token = try await prompt.createSession()
        #expect(!token.isEmpty)
        // The silent one is closed once the timeout has run out.
        clock.advance(by: .milliseconds(1))
        let closed = try await silent.awaitClose()
        #expect(closed?.code == 4096)
        #expect(closed?.reason.contains("session-establish-timedout") == true)
        await server.stop()
    }
}
