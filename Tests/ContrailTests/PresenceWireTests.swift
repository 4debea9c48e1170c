import Contrail
import Testing

/// The presence messages (Protocol §8.20) as they go over the wire: round trips, `null` as "none"
/// or "left", and the typed errors for what a peer may not send.
@Suite struct PresenceWireTests {
    @Test func presenceRoundTripsWithNullForNone() throws {
        let text = #"{"type":"Presence","index":0,"scopeIndex":2,"value":{"name":"Ada","cursor":[1,2]}}"#
        guard case .presence(let update) = try Message(json: JSON(parsing: text)) else {
            Issue.record("not a Presence")
            return
        }
        #expect(update == PresenceUpdate(scopeIndex: 2, value: ["name": "Ada", "cursor": [1, 2]]))
        #expect(try Message(json: Message.presence(update).json) == .presence(update))
        let none = try Message(json: JSON(parsing: #"{"type":"Presence","index":0,"scopeIndex":0,"value":null}"#))
        #expect(none == .presence(PresenceUpdate(scopeIndex: 0, value: nil)))
        #expect(PresenceUpdate(scopeIndex: 0, value: nil).json["value"] == .null, "none is sent as null")
    }

    @Test func peersDecodeLeavesAsNilAndKeepUsers() throws {
        let text = #"{"type":"PresencePeers","index":0,"scopeIndex":0,"replace":true,"peers":[{"peer":"p1","user":"ada","value":{"x":1}},{"peer":"p2","value":null},{"peer":"p3"}]}"#
        guard case .presencePeers(let peers) = try Message(json: JSON(parsing: text)) else {
            Issue.record("not PresencePeers")
            return
        }
        #expect(peers.replace)
        #expect(peers.peers == [PresencePeers.Entry(peer: "p1", user: "ada", value: ["x": 1]),
                                PresencePeers.Entry(peer: "p2", value: nil), PresencePeers.Entry(peer: "p3", value: nil)])
        #expect(try Message(json: Message.presencePeers(peers).json) == .presencePeers(peers))
    }

    @Test(arguments: [
        #"{"type":"Presence","index":1,"scopeIndex":0,"value":null}"#,
        #"{"type":"Presence","index":0,"value":null}"#,
        #"{"type":"PresencePeers","index":0,"scopeIndex":0}"#,
        #"{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[{"value":1}]}"#,
        #"{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[{"peer":"p","user":5,"value":1}]}"#,
        #"{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[7]}"#,
    ])
    func malformedPresenceIsATypedError(text: String) throws {
        #expect(throws: WireError.self) { try Message(json: JSON(parsing: text)) }
        // Positive control: the same shape, well formed, decodes.
        #expect(throws: Never.self) { try Message(json: JSON(parsing: #"{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[]}"#)) }
    }
}
