import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

@Suite("Server sessions and fetch")
struct ServerSessionTests {
    @Test func handshakeGivesAStrongTokenAtIndexZero() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.send(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#)
        let reply = try await client.next()
        #expect(reply["type"] == "SessionCreateReply")
        #expect(reply["index"] == 0)
        #expect(reply["replyTo"] == nil)
        let token = try #require(reply["sessionToken"]?.stringValue)
        #expect(token.count >= 43)
        #expect(token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        await server.stop()
    }

    @Test func scopesConfiguredUpFrontExistBeforeAnyFetch() async throws {
        var options = Wire.options()
        options.scopes = ["Lobby"]
        let server = try ContrailServer(options: options)
        let state = try #require(await server.state(ofScope: "Lobby"))
        let root = try #require(state["root"]?.stringValue)
        #expect(state["objects"]?[root] != nil)
        #expect(await server.state(ofScope: "Elsewhere") == nil)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        let (_, fetched) = try await client.fetch("Lobby", index: 1)
        #expect(fetched["rootUUID"]?.stringValue == root)
        await server.stop()
    }

    @Test func fetchOfANewScopeSendsReplyThenStateWithARoot() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.createSession()
        let (reply, state) = try await client.fetch("Canvas", index: 1)
        #expect(reply["index"] == 1)
        #expect(reply["replyTo"] == 1)
        #expect(reply["scopeIndex"] == 0)
        #expect(state["index"] == 2)
        #expect(state["scopeIndex"] == 0)
        let root = try #require(state["rootUUID"]?.stringValue)
        #expect(UUID(wireString: root) != nil)
        let fragments = try #require(state["fragments"]?.arrayValue)
        #expect(fragments.count == 1)
        #expect(fragments.first?["type"] == "change")
        #expect(fragments.first?["uuid"] == .string(root))
        await server.stop()
    }

    @Test func syncIsRepliedPerFragmentAndBroadcastToOtherSessionsOnly() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = ServerTestClient(server: server)
        let b = ServerTestClient(server: server)
        try await a.createSession()
        try await b.createSession()
        let (_, state) = try await a.fetch("Canvas", index: 1)
        _ = try await b.fetch("Canvas", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let shape = Wire.uuid()
        let reply = try await a.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Canvas", ["shapes": Wire.array([shape]), "title": "hi"]),
            Wire.fragment("add", shape, "Shape", ["x": 10, "y": 20.5]),
        ])
        #expect(reply["replyTo"] == 2)
        #expect(reply["fragmentReplies"] == [[:], [:]])
        let broadcast = try await b.next()
        #expect(broadcast["type"] == "ScopeSync")
        #expect(broadcast["index"] == 3)
        #expect(broadcast["scopeIndex"] == 0)
        #expect(broadcast["atomic"] == nil)
        #expect(broadcast["fragments"]?.arrayValue?.count == 2)
        #expect(broadcast["fragments"]?[1]?["properties"]?["x"] == 10)
        let stateJSON = try #require(await server.state(ofScope: "Canvas"))
        #expect(stateJSON["root"] == .string(root))
        #expect(stateJSON["objects"]?[root]?["clsName"] == "Canvas")
        #expect(stateJSON["objects"]?[shape]?["properties"] == ["x": 10, "y": 20.5])
        // No echo: A's next message is not a broadcast of its own change.
        try await a.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":true}"#)
        let ping = try await a.next()
        #expect(ping["type"] == "Ping")
        #expect(ping["ack"] == 2)
        #expect(ping["resendMissing"]?.boolValue == true)
        // Resend frame: everything unacked (fetch reply, state, sync reply), no ScopeSync.
        var types: [String] = []
        for _ in 0..<3 { types.append(try await a.next()["type"]?.stringValue ?? "") }
        #expect(types == ["ScopeFetchReply", "ScopeState", "ScopeSyncReply"])
        await server.stop()
    }

    /// In virtual time: the session ticker (ticking every eighth of the interval) sleeps on the test
    /// clock, and pings each attached connection once its interval (±10 %) has passed.
    @Test func attachedConnectionsArePingedAfterTheInterval() async throws {
        let clock = TestClock()
        var options = Wire.options()
        options.clock = clock
        options.pingInterval = .seconds(10)
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        #expect(await clock.waitForSleepers(1))  // the ticker
        // Positive control: before 90 % of the interval no ping is due (a tick has run at that time
        // once the ticker sleeps again): the next message is the reply to a fetch sent now.
        clock.advance(by: .seconds(9) - .milliseconds(1))
        #expect(await clock.waitForSleepers(1))
        try await client.send(#"{"type":"ScopeFetch","index":1,"name":"S","params":{}}"#)
        #expect(try await client.nextMessage()?["type"] == "ScopeFetchReply")
        #expect(try await client.nextMessage()?["type"] == "ScopeState")
        // By 110 % of the interval the keep-alive ping has come, acknowledging the fetch.
        clock.advance(by: .seconds(2) + .milliseconds(1))
        let ping = try await client.nextMessage()
        #expect(ping?["type"] == "Ping" && ping?["resendMissing"] == false && ping?["ack"] == 1, "\(String(describing: ping))")
        await server.stop()
    }
}
