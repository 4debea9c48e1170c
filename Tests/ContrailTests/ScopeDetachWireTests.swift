import Contrail
import Testing

/// The `ScopeDetach` extension's messages and the `extensions` field of `SessionCreateReply`.
@Suite struct ScopeDetachWireTests {
    @Test func scopeDetachRoundTrips() throws {
        let message = try Message(json: JSON(parsing: #"{"type":"ScopeDetach","index":4,"scopeIndex":0}"#))
        #expect(message == .scopeDetach(ScopeDetach(index: 4, scopeIndex: 0)))
        #expect(message.index == 4 && message.typeName == "ScopeDetach" && message.replyTo == nil)
        #expect(message.json == ["type": "ScopeDetach", "index": 4, "scopeIndex": 0])
    }

    @Test func scopeDetachNeedsAnUnsignedScopeIndex() throws {
        for bad in [#"{"type":"ScopeDetach","index":4}"#, #"{"type":"ScopeDetach","index":4,"scopeIndex":-1}"#,
                    #"{"type":"ScopeDetach","index":4,"scopeIndex":"0"}"#] {
            #expect(throws: WireError.invalidMessage(type: "ScopeDetach", reason: "Invalid scopeIndex")) {
                try Message(json: JSON(parsing: bad))
            }
        }
    }

    @Test func scopeDetachReplyRoundTripsWithAndWithoutError() throws {
        let ok = try Message(json: JSON(parsing: #"[{"type":"ScopeDetachReply","index":7,"replyTo":4}]"#)[0]!)
        #expect(ok == .scopeDetachReply(ScopeDetachReply(index: 7, replyTo: 4)))
        #expect(ok.replyTo == 4)
        let failed = try Message(json: JSON(parsing:
            #"{"type":"ScopeDetachReply","index":8,"replyTo":5,"error":{"message":"Scope at index 9 was not found","type":"scope-index-not-found"}}"#))
        #expect(failed == .scopeDetachReply(ScopeDetachReply(index: 8, replyTo: 5, error: .scopeIndexNotFound(9))))
        #expect(failed.json["error"]?["type"] == "scope-index-not-found")
        #expect(throws: WireError.invalidMessage(type: "ScopeDetachReply", reason: "Invalid replyTo")) {
            try Message(json: JSON(parsing: #"{"type":"ScopeDetachReply","index":8}"#))
        }
    }

    @Test func sessionCreateReplyExtensions() throws {
        // The original server's reply has no `extensions`: none.
        let original = try SessionCreateReply(json: JSON(parsing: #"{"type":"SessionCreateReply","index":0,"sessionToken":"abc"}"#))
        #expect(original.extensions.isEmpty)
        #expect(original.json["extensions"] == nil)
        let contrail = try SessionCreateReply(json: JSON(parsing:
            #"{"type":"SessionCreateReply","index":0,"sessionToken":"abc","extensions":["ScopeDetach"]}"#))
        #expect(contrail.extensions == ["ScopeDetach"])
        #expect(contrail.json["extensions"] == ["ScopeDetach"])
        #expect(throws: WireError.invalidMessage(type: "SessionCreateReply", reason: "Invalid extensions")) {
            try SessionCreateReply(json: JSON(parsing: #"{"type":"SessionCreateReply","index":0,"sessionToken":"abc","extensions":[1]}"#))
        }
    }
}
