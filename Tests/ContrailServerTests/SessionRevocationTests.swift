import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// `ContrailServer.revoke(user:)` and credential expiry end live sessions (issue 22), in virtual time.
@Suite("Revocation and credential expiry")
struct SessionRevocationTests {
    /// Params `{"user": name, "ttl": seconds}`: that user with every scope, expiring after `ttl` if given.
    static func options(clock: TestClock? = nil) -> ServerOptions {
        var options = Wire.options()
        if let clock { options.clock = clock }
        options.pingInterval = .seconds(8)  // the session ticker (which ends expired credentials) ticks every second
        options.sessionHook = { params, _ in
            guard case .string(let user)? = params["user"] else { return .deny() }
            let expiry = params["ttl"]?.doubleValue.map { Date().addingTimeInterval($0) }
            return .allow(SessionIdentity(user: user, grants: .everything, expiry: expiry))
        }
        return options
    }

    @Test func revokingAUserEndsItsSessionsAtOnceAndTheyCannotResume() async throws {
        let server = try ContrailServer(options: Self.options())
        let alice1 = ServerTestClient(server: server)
        let alice2 = ServerTestClient(server: server)
        let bob = ServerTestClient(server: server)
        let token = try await alice1.createSession(params: ["user": "alice"])
        try await alice2.createSession(params: ["user": "alice"])
        try await bob.createSession(params: ["user": "bob"])
        _ = try await alice1.fetch("S", index: 1)
        let (_, state) = try await bob.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)

        #expect(await server.revoke(user: "alice") == 2)
        for client in [alice1, alice2] {
            let closed = try await client.awaitClose()
            #expect(closed?.code == 4097)
            #expect(closed?.reason.contains("session-revoked") == true)
        }
        let resume = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token)])
        let refused = try await resume.awaitClose()
        #expect(refused?.code == 4096)
        #expect(refused?.reason.contains("session-token-unrecognized") == true)
        // Positive control: bob's session goes on, and revoking nobody ends nothing.
        let reply = try await bob.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["n": 1])])
        #expect(reply["fragmentReplies"] == [[:]])
        #expect(await server.revoke(user: "carol") == 0)
        await server.stop()
    }

    @Test func aCredentialsExpiryEndsItsSessionWhenItPasses() async throws {
        let clock = TestClock()
        let server = try ContrailServer(options: Self.options(clock: clock))
        let short = ServerTestClient(server: server)
        let forever = ServerTestClient(server: server)
        try await short.createSession(params: ["user": "alice", "ttl": 60])
        try await forever.createSession(params: ["user": "bob"])
        // Only the session ticker sleeps (the establish timers were cancelled; no timer per credential).
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .seconds(58))
        #expect(await clock.waitForSleepers(1))  // the ticker ticked at 58 s and sleeps again
        _ = try await short.fetch("S", index: 1)  // still alive just before its expiry
        clock.advance(by: .seconds(3))
        let closed = try await short.awaitClose()
        #expect(closed?.code == 4097)
        #expect(closed?.reason.contains("credential-expired") == true)
        // Positive control: the session without expiry lives on.
        _ = try await forever.fetch("S", index: 1)
        await server.stop()
    }

    @Test func anAlreadyExpiredCredentialIsDenied() async throws {
        let server = try ContrailServer(options: Self.options())
        let late = ServerTestClient(server: server)
        try await late.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": "alice", "ttl": -1]])
        let reply = try await late.next()
        #expect(reply["error"]?["type"] == "session-creation-denied")
        #expect(reply["error"]?["message"]?.stringValue?.contains("expired") == true)
        try await ServerTestClient(server: server).createSession(params: ["user": "alice", "ttl": 60])
        await server.stop()
    }
}
