import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

@Suite("Server delivery: indices, resend, expiry, restart")
struct ServerDeliveryTests {
    @Test func indexGapAsksForResendAndDuplicatesAreIgnored() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = ServerTestClient(server: server)
        try await a.createSession()
        // Index 2 before 1: something was lost.
        try await a.send(#"{"type":"ScopeFetch","index":2,"name":"Other","params":{}}"#)
        let ping = try await a.next()
        #expect(ping["type"] == "Ping")
        #expect(ping["ack"] == 0)
        #expect(ping["resendMissing"] == true)
        let (reply, _) = try await a.fetch("S", index: 1)
        #expect(reply["replyTo"] == 1)
        let (second, _) = try await a.fetch("Other", index: 2)
        #expect(second["scopeIndex"] == 1)
        // A duplicate of index 2 is dropped: the next reply answers index 3.
        try await a.send(#"{"type":"ScopeFetch","index":2,"name":"Third","params":{}}"#)
        let (third, _) = try await a.fetch("Fourth", index: 3)
        #expect(third["replyTo"] == 3)
        #expect(third["scopeIndex"] == 2)
        await server.stop()
    }

    @Test func resumeWithTokenResendsWhatWasNotAcknowledged() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (a, tokenB, root) = try await ServerTestClient.oneStaysOneLeaves(server)
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["v": 1])])
        _ = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["v": 2])])
        // B comes back with its token and asks for what it missed.
        let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", tokenB)])
        try await resumed.send(#"{"type":"Ping","index":0,"ack":2,"resendMissing":true}"#)
        let ping = try await resumed.next()
        #expect(ping["type"] == "Ping")
        #expect(ping["resendMissing"] == true)
        #expect(ping["ack"] == 1)
        let first = try await resumed.next(), second = try await resumed.next()
        #expect(first["index"] == 3 && first["fragments"]?[0]?["properties"]?["v"] == 1)
        #expect(second["index"] == 4 && second["fragments"]?[0]?["properties"]?["v"] == 2)
        await server.stop()
    }

    /// In virtual time: the session ticker (every eighth of the expiry here) sleeps on the test clock.
    @Test func idleSessionsExpireWith4097() async throws {
        let clock = TestClock()
        var options = Wire.options()
        options.clock = clock
        options.sessionExpiry = .seconds(100)
        options.pingInterval = .seconds(1_000)  // no keep-alive ping within the test
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        let token = try await a.createSession()
        #expect(await clock.waitForSleepers(1))  // the ticker watches the session
        // Positive control: just before the expiry the session is alive (a tick has run at that
        // time once the ticker sleeps again) and answers; that message restarts its idle time.
        clock.advance(by: .seconds(100) - .milliseconds(1))
        #expect(await clock.waitForSleepers(1))
        try await a.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":true}"#)
        let ping = try await a.next()
        #expect(ping["type"] == "Ping" && ping["resendMissing"] == true)
        // A full expiry of silence after that message: closed with 4097, the token forgotten.
        clock.advance(by: .seconds(100))
        #expect(try await a.awaitClose()?.code == 4097)
        let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", token)])
        #expect(try await resumed.awaitClose()?.code == 4096)
        await server.stop()
    }

    @Test func fullResendBufferEndsTheSession() async throws {
        var options = Wire.options()
        options.maxResendBytes = 850   // two fetches of an empty scope (~330 bytes each) fit, a third does not
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        _ = try await a.fetch("S", index: 1)
        _ = try await a.fetch("S2", index: 2)
        try await a.send(#"{"type":"ScopeFetch","index":3,"name":"S3","params":{}}"#)
        let closed = try await a.awaitClose()
        #expect(closed?.code == 4097)
        #expect(closed?.reason.contains("limit-exceeded") == true)
        await server.stop()
    }

    @Test func oversizedMessagesCloseWith4098() async throws {
        var options = Wire.options()
        options.maxMessageBytes = 256
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        let big = String(repeating: "x", count: 400)
        try await a.send(#"{"type":"ScopeFetch","index":1,"name":"\#(big)","params":{}}"#)
        let closed = try await a.awaitClose()
        #expect(closed?.code == 4098)
        #expect(closed?.reason.contains("limit-exceeded") == true)
        await server.stop()
    }

    @Test func restartFromTheDataDirectoryKeepsAcknowledgedState() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = Wire.options()
        options.dataDirectory = directory
        let child = Wire.uuid()
        let root: String
        do {
            let server = try ContrailServer(options: options)
            let a = ServerTestClient(server: server)
            try await a.createSession()
            let (_, state) = try await a.fetch("Canvas/1", index: 1)
            root = try #require(state["rootUUID"]?.stringValue)
            _ = try await a.sync(index: 2, fragments: [
                Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([child]), "title": "t"]),
                Wire.fragment("add", child, "Shape", ["x": 1.5]),
            ])
            let reply = try await a.sync(index: 3, fragments: [Wire.fragment("change", child, "Shape", ["x": 2.5])])
            #expect(reply["fragmentReplies"] == [[:]])
            await server.stop()
        }
        let restarted = try ContrailServer(options: options)
        let b = ServerTestClient(server: restarted)
        try await b.createSession()
        let (_, state) = try await b.fetch("Canvas/1", index: 1)
        #expect(state["rootUUID"] == .string(root))
        let fragments = try #require(state["fragments"]?.arrayValue)
        #expect(fragments.count == 2)
        #expect(fragments[0]["properties"]?["title"] == "t")
        #expect(fragments[1]["type"] == "add")
        #expect(fragments[1]["properties"]?["x"] == 2.5)
        // Kinds survive too: the collection still rejects non-arrays.
        let reply = try await b.sync(index: 2, fragments: [Wire.fragment("change", root, "Canvas", ["shapes": "x"])])
        #expect(reply["fragmentReplies"]?[0]?["error"]?["message"] == "Collection type without array value at 'shapes'")
        await restarted.stop()
    }
}
