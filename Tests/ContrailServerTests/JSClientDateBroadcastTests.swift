import Contrail
@testable import ContrailServer
import Foundation
import Testing

/// Found running the original JS client against `contrail serve`: a shape one JS client added with
/// a `createdAt` reached the other JS client as 1970-01-17, because the broadcast carried the stored
/// epoch seconds and the JS client reads a number as milliseconds. The original broadcasts what it
/// received (§4.10); the stored state keeps epoch seconds (§8.1).
@Suite("JS client dates in broadcasts")
struct JSClientDateBroadcastTests {
    @Test func broadcastKeepsTheJSClientsISODatesWhileTheStateHasSeconds() async throws {
        let server = try ContrailServer(options: Wire.options())
        let writer = ServerTestClient(server: server)
        let reader = ServerTestClient(server: server)
        for client in [writer, reader] {
            try await client.send(#"{"index":0,"type":"SessionCreate","params":{},"version":"0.1.0"}"#)
            _ = try await client.next()
            try await client.send(#"{"index":1,"type":"ScopeFetch","name":"Canvas","params":{}}"#)
            _ = try await client.next()
        }
        let root = try #require(try await writer.next()["rootUUID"]?.stringValue)
        _ = try await reader.next()
        let shape = "96b3aaa8-7f51-4ee4-a75f-3ba6c4133105"
        // The original JS client's exact frame (js-peer addShape, recorded with WIRE_LOG).
        try await writer.send("""
        {"index":2,"type":"ScopeSync","atomic":false,"scopeIndex":0,"fragments":[{"clsName":"Shape","properties":\
        {"x":5,"y":null,"width":100,"height":100,"color":null,"kind":null,"createdAt":"2015-01-01T00:00:00.123Z",\
        "visible":null,"label":"b"},"type":"add","uuid":"\(shape)"},{"clsName":"Canvas","properties":{"shapes":\
        ["\(shape)"]},"type":"change","uuid":"\(root)"}]}
        """)
        #expect(try await writer.next()["fragmentReplies"] == [[:], [:]])
        let broadcast = try await reader.next()
        #expect(broadcast["type"] == "ScopeSync")
        #expect(broadcast["fragments"]?[0]?["properties"]?["createdAt"] == "2015-01-01T00:00:00.123Z")
        #expect(broadcast["fragments"]?[0]?["properties"]?["x"] == 5)
        #expect(broadcast["fragments"]?[1]?["properties"]?["shapes"] == [.string(shape)])
        // The stored state, and so every late joiner, has epoch seconds.
        let stored = await server.state(ofScope: "Canvas")?["objects"]?[shape]?["properties"]?["createdAt"]
        #expect(stored?.doubleValue == 1420070400.123)
        await server.stop()
    }

    @Test func asReceivedRestoresOnlyConvertedValues() throws {
        let uuid = UUID()
        let received = [SyncFragment(kind: .add, uuid: uuid, className: "Shape",
                                     properties: ["at": "2015-01-01T00:00:00Z", "label": "x", "n": 1])]
        let canonical = CanonicalDate.canonical(received)
        #expect(canonical[0].properties["at"] == 1_420_070_400)
        // The store may have changed a value (a merge): only values equal to the conversion go back.
        var accepted = canonical
        accepted[0].properties["n"] = 2
        let broadcast = CanonicalDate.asReceived(accepted, received: received)
        #expect(broadcast[0].properties == ["at": "2015-01-01T00:00:00Z", "label": "x", "n": 2])
        accepted[0].properties["at"] = 7
        #expect(CanonicalDate.asReceived(accepted, received: received)[0].properties["at"] == 7)
    }
}
