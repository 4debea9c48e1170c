import Contrail
@testable import ContrailServer
import Foundation
import Testing

/// Where `contrail serve` used to differ from the original Jetstream server on the wire, fed the
/// original JS client's exact frames.
@Suite("Wire fidelity")
struct WireFidelityTests {
    @Test func overLongCloseReasonsStayValidJSON() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        // The original JS client's keep-alive, sent before any SessionCreate.
        try await client.send(#"{"type":"Ping","index":0,"ack":0,"resendMissing":false}"#)
        let closed = try #require(try await client.awaitClose())
        #expect(closed.code == JetstreamCloseCode.denied)
        #expect(closed.reason.utf8.count <= 123)
        let body = try JSON(parsing: Array(closed.reason.utf8))
        #expect(body["type"] == "unrecognized-handshake")
        let message = try #require(body["message"]?.stringValue)
        #expect(message.hasPrefix("Unrecognized handshake, should send SessionCreate"))
        #expect(message.hasSuffix("…"))
        // A short reason goes out whole (positive control).
        #expect(WireErrorBody.rejected.closeReason() == #"{"message":"Connection was rejected","type":"rejected"}"#)
        // Multi-byte and escaped characters are cut on a boundary, still JSON.
        let wide = WireErrorBody(message: String(repeating: "é\"\n", count: 80), type: "bad-input").closeReason()
        #expect(wide.utf8.count <= 123)
        #expect(try JSON(parsing: Array(wide.utf8))["type"] == "bad-input")
        await server.stop()
    }

    @Test func replyMessagesAreIgnored() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        try await client.createSession()
        try await client.send(#"[{"type":"Reply","index":1,"replyTo":1}]"#)
        // The connection stays open and the session keeps working.
        let (reply, state) = try await client.fetch("Canvas", index: 1)
        #expect(reply["scopeIndex"] == 0)
        #expect(state["type"] == "ScopeState")
        #expect(client.closed == nil)
        await server.stop()
    }

    @Test func isoDatesAreStoredAndSentAsEpochSeconds() async throws {
        let server = try ContrailServer(options: Wire.options())
        let writer = ServerTestClient(server: server)
        try await writer.createSession()
        let (_, state) = try await writer.fetch("Canvas", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let shape = Wire.uuid()
        // The original JS client's frame: its dates are ISO strings (Date.toJSON).
        try await writer.send("""
        {"type":"ScopeSync","index":2,"scopeIndex":0,"atomic":false,"fragments":[
         {"type":"change","uuid":"\(root)","clsName":"Canvas","properties":{"shapes":["\(shape)"]}},
         {"type":"add","uuid":"\(shape)","clsName":"Shape","properties":{"createdAt":"2015-01-01T00:00:00.123Z",
          "label":"2015 was a year","stamps":["2015-01-01T00:00:01Z","2015-01-01T00:00:02.500Z"]}}]}
        """)
        let syncReply = try await writer.next()
        #expect(syncReply["fragmentReplies"] == [[:], [:]])
        let joiner = ServerTestClient(server: server)
        try await joiner.createSession()
        let (_, joined) = try await joiner.fetch("Canvas", index: 1)
        let added = try #require(joined["fragments"]?.arrayValue?.first { $0["uuid"]?.stringValue == shape })
        #expect(added["properties"]?["createdAt"]?.doubleValue == 1420070400.123)
        #expect(added["properties"]?["stamps"] == [1_420_070_401, .double(1420070402.5)])
        #expect(added["properties"]?["label"] == "2015 was a year")   // not a timestamp: kept
        await server.stop()
    }

    @Test func aFreshScopeStateCarriesTheDeclaredRoot() async throws {
        var options = Wire.options()
        options.roots = try ScopeRoot.list(json: JSON(parsing: Array(#"{"roots": {"Canvas": {"clsName": "Canvas", "properties": {"name": "Shapes Demo", "shapes": []}}}}"#.utf8)))
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        let (_, state) = try await client.fetch("Canvas", index: 1)
        let root = try #require(state["fragments"]?[0])
        #expect(root["type"] == "change")
        #expect(root["uuid"] == state["rootUUID"])
        #expect(root["clsName"] == "Canvas")
        #expect(root["properties"] == ["name": "Shapes Demo", "shapes": []])
        // A scope without a declaration keeps the schema-agnostic empty root (control).
        let (_, other) = try await client.fetch("Other", index: 2)
        #expect(other["fragments"]?[0]?["clsName"] == "")
        await server.stop()
    }

    @Test func onlyExactTimestampsAreDates() {
        let valid = ["2015-01-01T00:00:00.123Z", "1970-01-01T00:00:00Z"]
        let invalid = ["2015-13-01T00:00:00Z", "2015-02-30T00:00:00Z", "2015-01-01 00:00:00Z", "2015-01-01T00:00:00.12Z",
                       "2015-01-01T00:00:00+01:00", "hello", ""]
        #expect(valid.allSatisfy { CanonicalDate.seconds($0) != nil })
        #expect(!invalid.contains { CanonicalDate.seconds($0) != nil })
    }
}
