import Foundation
import Testing
@testable import Contrail
@testable import ContrailWire

private func decodeOne(_ text: String) throws -> Message {
    let messages = try MessageFrame.decode(text)
    try #require(messages.count == 1)
    return messages[0]
}

private func wireError(_ text: String) -> WireError? {
    do {
        _ = try MessageFrame.decode(text)
        return nil
    } catch {
        return error
    }
}

/// Decodes, re-encodes (bare and as an array) and decodes again; both must give the same message.
private func expectRoundTrip(_ message: Message, sourceLocation: SourceLocation = #_sourceLocation) throws {
    for asArray in [false, true] {
        let text = MessageFrame.encode([message], asArray: asArray)
        let json = try JSON(parsing: text)
        #expect((json.arrayValue != nil) == asArray, sourceLocation: sourceLocation)
        #expect(try MessageFrame.decode(text) == [message], sourceLocation: sourceLocation)
    }
}

@Suite struct MessageTests {
    static let room = "6f1c4b7e-0d1a-4c55-9a7e-3b2f1e0d9c8a"
    static let message1 = "a1d2e3f4-0000-4000-8000-000000000001"
    static let message2 = "b2d2e3f4-0000-4000-8000-000000000002"
    static let author = "9e000000-0000-4000-8000-00000000000a"

    // MARK: Spec examples (Protocol §2)

    @Test func sessionCreate() throws {
        let message = try decodeOne(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{"userId":"42"}}"#)
        #expect(message == .sessionCreate(SessionCreate(index: 0, version: "0.2.0", params: ["userId": "42"])))
        #expect(message.index == 0)
        #expect(message.typeName == "SessionCreate")
        try expectRoundTrip(message)
        // params defaults to {} and is always sent
        let bare = try decodeOne(#"{"type":"SessionCreate","index":0,"version":"0.1.0"}"#)
        #expect(bare == .sessionCreate(SessionCreate(version: "0.1.0")))
        #expect(bare.json["params"] == .object([:]))
    }

    @Test func sessionCreateReply() throws {
        let accept = try decodeOne(#"[{"type":"SessionCreateReply","index":0,"sessionToken":"Qm9v…Zz"}]"#)
        #expect(accept == .sessionCreateReply(SessionCreateReply(sessionToken: "Qm9v…Zz")))
        try expectRoundTrip(accept)
        let deny = try decodeOne(#"[{"type":"SessionCreateReply","index":0,"error":{"message":"Session creation denied"}}]"#)
        #expect(deny == .sessionCreateReply(SessionCreateReply(error: .sessionCreationDenied)))
        #expect(deny.json["replyTo"] == nil)
        try expectRoundTrip(deny)
    }

    @Test func scopeFetch() throws {
        let message = try decodeOne(#"{"type":"ScopeFetch","index":1,"name":"Canvas","params":{}}"#)
        #expect(message == .scopeFetch(ScopeFetch(index: 1, name: "Canvas")))
        try expectRoundTrip(message)
    }

    @Test func scopeFetchReply() throws {
        let success = try decodeOne(#"[{"type":"ScopeFetchReply","index":1,"replyTo":1,"scopeIndex":0}]"#)
        #expect(success == .scopeFetchReply(ScopeFetchReply(index: 1, replyTo: 1, scopeIndex: 0)))
        #expect(success.replyTo == 1)
        try expectRoundTrip(success)
        let failure = try decodeOne(#"[{"type":"ScopeFetchReply","index":1,"replyTo":1,"error":{"message":"No such scope"}}]"#)
        #expect(failure == .scopeFetchReply(ScopeFetchReply(index: 1, replyTo: 1, error: WireErrorBody(message: "No such scope"))))
        try expectRoundTrip(failure)
        let typed = try decodeOne(#"{"type":"ScopeFetchReply","index":2,"replyTo":2,"error":{"message":"Nope","type":"app-denied"}}"#)
        #expect(typed == .scopeFetchReply(ScopeFetchReply(index: 2, replyTo: 2, error: WireErrorBody(message: "Nope", type: "app-denied"))))
    }

    @Test func scopeState() throws {
        let text = """
        [{"type":"ScopeState","index":2,"scopeIndex":0,"rootUUID":"\(Self.room.uppercased())","fragments":[
          {"type":"change","uuid":"\(Self.room)","clsName":"ChatRoom","properties":{"messages":["\(Self.message1)"]}},
          {"type":"add","uuid":"\(Self.message1)","clsName":"Message","properties":{"text":"hello","postedAt":1420070400.123}}]}]
        """
        let message = try decodeOne(text)
        guard case .scopeState(let state) = message else { Issue.record("not a ScopeState"); return }
        #expect(state.index == 2 && state.scopeIndex == 0)
        #expect(state.rootUUID == UUID(wireString: Self.room))
        #expect(state.fragments.map(\.kind) == [.change, .add])
        #expect(state.fragments[1].properties["postedAt"] == .double(1420070400.123))
        #expect(message.json["rootUUID"] == .string(Self.room))
        try expectRoundTrip(message)
    }

    @Test func scopeSync() throws {
        let text = """
        {"type":"ScopeSync","index":3,"scopeIndex":0,"atomic":true,"procedure":"ChatRoom.postMessage",
         "fragments":[
          {"type":"change","uuid":"\(Self.room)","clsName":"ChatRoom","properties":{"messages":["\(Self.message1)","\(Self.message2)"]}},
          {"type":"add","uuid":"\(Self.message2)","clsName":"Message",
           "properties":{"author":"\(Self.author)","postedAt":1420070400.123,"text":"hi"}}]}
        """
        let message = try decodeOne(text)
        guard case .scopeSync(let sync) = message else { Issue.record("not a ScopeSync"); return }
        #expect(sync.index == 3 && sync.scopeIndex == 0)
        #expect(sync.atomic == true)
        #expect(sync.procedure == "ChatRoom.postMessage")
        #expect(sync.fragments.count == 2)
        #expect(sync.fragments[1].properties == ["author": .string(Self.author), "postedAt": 1420070400.123, "text": "hi"])
        try expectRoundTrip(message)
        // A broadcast has neither atomic nor procedure, and an empty change set is legal.
        let broadcast = ScopeSync(index: 4, scopeIndex: 1, fragments: [])
        #expect(broadcast.json["atomic"] == nil && broadcast.json["procedure"] == nil)
        try expectRoundTrip(.scopeSync(broadcast))
        // Procedure needs only the presence of atomic, not its value.
        let falseAtomic = try decodeOne(#"{"type":"ScopeSync","index":5,"scopeIndex":0,"atomic":false,"procedure":"A.b","fragments":[]}"#)
        #expect(falseAtomic == .scopeSync(ScopeSync(index: 5, scopeIndex: 0, fragments: [], atomic: false, procedure: "A.b")))
    }

    @Test func scopeSyncReply() throws {
        let message = try decodeOne(#"[{"type":"ScopeSyncReply","index":5,"replyTo":3,"fragmentReplies":[{}, {"error":{"message":"ModelObject not found"}}]}]"#)
        let expected = ScopeSyncReply(index: 5, replyTo: 3, fragmentReplies: [.accepted, .rejected(WireErrorBody(message: "ModelObject not found"))])
        #expect(message == .scopeSyncReply(expected))
        #expect(expected.fragmentReplies.map(\.isAccepted) == [true, false])
        #expect(expected.json["fragmentReplies"]?[0] == .object([:]))
        try expectRoundTrip(message)
        let modified = try decodeOne(#"{"type":"ScopeSyncReply","index":6,"replyTo":4,"fragmentReplies":[{"modifications":{"x":3}}]}"#)
        #expect(modified == .scopeSyncReply(ScopeSyncReply(index: 6, replyTo: 4, fragmentReplies: [FragmentReply(modifications: ["x": 3])])))
        try expectRoundTrip(modified)
    }

    @Test func ping() throws {
        let message = try decodeOne(#"{"type":"Ping","index":0,"ack":6,"resendMissing":false}"#)
        #expect(message == .ping(Ping(ack: 6)))
        try expectRoundTrip(message)
        #expect(try decodeOne(#"{"type":"Ping","index":0,"ack":6,"resendMissing":true}"#) == .ping(Ping(ack: 6, resendMissing: true)))
        // Only a literal true counts; resendMissing is always sent.
        for value in ["1", "\"true\"", "null", "{}"] {
            #expect(try decodeOne(#"{"type":"Ping","index":0,"ack":6,"resendMissing":\#(value)}"#) == .ping(Ping(ack: 6)))
        }
        let missing = try decodeOne(#"{"type":"Ping","index":0,"ack":0}"#)
        #expect(missing == .ping(Ping(ack: 0)))
        #expect(missing.json["resendMissing"] == .bool(false))
    }

    @Test func ignoresUnknownFieldsAndAcceptsIntegralDoubles() throws {
        let message = try decodeOne(#"{"type":"ScopeFetch","index":1.0,"name":"Canvas","extra":[1,{"x":null}],"code":7}"#)
        #expect(message == .scopeFetch(ScopeFetch(index: 1, name: "Canvas")))
    }

    // MARK: Invalid messages

    @Test(arguments: [
        (#"{"type":"ScopeFetch","name":"C"}"#, WireError.invalidMessage(type: "ScopeFetch", reason: "Invalid index")),
        (#"{"type":"ScopeFetch","index":-1,"name":"C"}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid index")),
        (#"{"type":"ScopeFetch","index":1.5,"name":"C"}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid index")),
        (#"{"type":"ScopeFetch","index":"1","name":"C"}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid index")),
        (#"{"type":"ScopeFetch","index":18446744073709551615,"name":"C"}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid index")),
        (#"{"type":"ScopeFetch","index":1}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid name")),
        (#"{"type":"ScopeFetch","index":1,"name":5}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid name")),
        (#"{"type":"ScopeFetch","index":1,"name":"C","params":[]}"#, .invalidMessage(type: "ScopeFetch", reason: "Invalid params")),
        (#"{"type":"SessionCreate","index":0}"#, .invalidMessage(type: "SessionCreate", reason: "Requires version")),
        (#"{"type":"SessionCreate","index":0,"version":"1.0"}"#, .invalidMessage(type: "SessionCreate", reason: "Requires valid version")),
        (#"{"type":"SessionCreate","index":0,"version":2}"#, .invalidMessage(type: "SessionCreate", reason: "Requires valid version")),
        (#"{"type":"SessionCreateReply","index":0}"#, .invalidMessage(type: "SessionCreateReply", reason: "Requires sessionToken or error")),
        (#"{"type":"SessionCreateReply","index":0,"sessionToken":5}"#, .invalidMessage(type: "SessionCreateReply", reason: "Invalid sessionToken")),
        (#"{"type":"SessionCreateReply","index":0,"error":"no"}"#, .invalidMessage(type: "SessionCreateReply", reason: "Invalid error")),
        (#"{"type":"ScopeFetchReply","index":1,"scopeIndex":0}"#, .invalidMessage(type: "ScopeFetchReply", reason: "Invalid replyTo")),
        (#"{"type":"ScopeFetchReply","index":1,"replyTo":1}"#, .invalidMessage(type: "ScopeFetchReply", reason: "Requires scopeIndex or error")),
        (#"{"type":"ScopeFetchReply","index":1,"replyTo":1,"scopeIndex":-2}"#, .invalidMessage(type: "ScopeFetchReply", reason: "Invalid scopeIndex")),
        (#"{"type":"ScopeState","index":2,"rootUUID":"6f1c4b7e-0d1a-4c55-9a7e-3b2f1e0d9c8a","fragments":[]}"#,
         .invalidMessage(type: "ScopeState", reason: "Invalid scopeIndex")),
        (#"{"type":"ScopeState","index":2,"scopeIndex":0,"rootUUID":"root","fragments":[]}"#,
         .invalidMessage(type: "ScopeState", reason: "Invalid rootUUID")),
        (#"{"type":"ScopeState","index":2,"scopeIndex":0,"rootUUID":"6f1c4b7e-0d1a-4c55-9a7e-3b2f1e0d9c8a"}"#,
         .invalidMessage(type: "ScopeState", reason: "SyncFragments not on `fragments`")),
        (#"{"type":"ScopeState","index":2,"scopeIndex":0,"rootUUID":"6f1c4b7e-0d1a-4c55-9a7e-3b2f1e0d9c8a","fragments":[{"type":"add"}]}"#,
         .invalidFragment(index: 0, reason: "Invalid uuid")),
        (#"{"type":"ScopeSync","index":3,"fragments":[]}"#, .invalidMessage(type: "ScopeSync", reason: "Invalid scopeIndex")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":{}}"#, .invalidMessage(type: "ScopeSync", reason: "SyncFragments not on `fragments`")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"atomic":"yes"}"#, .invalidMessage(type: "ScopeSync", reason: "Invalid atomic")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"atomic":null}"#, .invalidMessage(type: "ScopeSync", reason: "Invalid atomic")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"atomic":true,"procedure":7}"#, .invalidMessage(type: "ScopeSync", reason: "Invalid procedure")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"atomic":true,"procedure":"post"}"#,
         .invalidMessage(type: "ScopeSync", reason: "Procedure must be of the format Model.procedure")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"atomic":true,"procedure":"A.b.c"}"#,
         .invalidMessage(type: "ScopeSync", reason: "Procedure must be of the format Model.procedure")),
        (#"{"type":"ScopeSync","index":3,"scopeIndex":0,"fragments":[],"procedure":"A.b"}"#,
         .invalidMessage(type: "ScopeSync", reason: "Procedure requires to be atomic")),
        (#"{"type":"ScopeSyncReply","index":5,"replyTo":3}"#, .invalidMessage(type: "ScopeSyncReply", reason: "Invalid fragmentReplies")),
        (#"{"type":"ScopeSyncReply","index":5,"replyTo":3,"fragmentReplies":[{},1]}"#,
         .invalidMessage(type: "ScopeSyncReply", reason: "Invalid fragmentReplies entry 1")),
        (#"{"type":"ScopeSyncReply","index":5,"replyTo":3,"fragmentReplies":[{"error":{"type":"x"}}]}"#,
         .invalidMessage(type: "ScopeSyncReply", reason: "Invalid fragmentReplies entry 0")),
        (#"{"type":"Ping","index":0}"#, .invalidMessage(type: "Ping", reason: "Invalid ack")),
        (#"{"type":"Ping","index":0,"ack":-1}"#, .invalidMessage(type: "Ping", reason: "Invalid ack")),
        (#"{"type":"Ping","index":0,"ack":"6"}"#, .invalidMessage(type: "Ping", reason: "Invalid ack")),
        (#"{"type":"Reply","index":4,"replyTo":2}"#, .unknownMessageType("Reply")),
        (#"{"type":"Bogus","index":1}"#, .unknownMessageType("Bogus")),
        (#"{"index":1}"#, .invalidMessage(type: nil, reason: "Message has no type")),
        (#"{"type":5,"index":1}"#, .invalidMessage(type: nil, reason: "Message has no type")),
        ("42", .invalidMessage(type: nil, reason: "Frame is neither a message object nor an array of messages")),
        ("\"Ping\"", .invalidMessage(type: nil, reason: "Frame is neither a message object nor an array of messages")),
        ("{\"type\":\"Ping\",", .malformedJSON(JSONError(offset: 15, reason: "unexpected end of input"))),
        ("not json", .malformedJSON(JSONError(offset: 1, reason: "unexpected 'o'"))),
    ] as [(String, WireError)])
    func invalidMessagesGiveTheRightError(text: String, expected: WireError) {
        #expect(wireError(text) == expected, "\(text)")
    }

    @Test func scopeSyncWithBadFragmentsNamesEachFragment() throws {
        let text = """
        {"type":"ScopeSync","index":7,"scopeIndex":2,"fragments":[
          {"type":"add","uuid":"\(Self.message1)","clsName":"Message","properties":{}},
          {"type":"add","uuid":"nope","clsName":"Message"},
          {"type":"change","uuid":"\(Self.room)","clsName":"ChatRoom","properties":{"o":{"nested":true}}},
          {"type":"change","uuid":"\(Self.room)","clsName":"ChatRoom"}]}
        """
        let error = wireError(text)
        #expect(error == .invalidScopeSyncFragments(index: 7, scopeIndex: 2, reasons: [
            nil, "Invalid uuid", "Property 'o': not a string, number, boolean, array, date, null", nil,
        ]))
        #expect(error?.description == "ScopeSync 7 has invalid fragments: fragment 1: Invalid uuid; fragment 2: Property 'o': not a string, number, boolean, array, date, null")
        #expect(error?.jetstreamMessage == "Invalid uuid")
    }

    @Test(arguments: ["0.2.0", "0.1.0", "1.2.3-alpha.1", "1.2.3+build.5", "1.0.0-rc.1+sha.abc", "v1.2.3", "10.20.30", "1.0.0-0A.is.legal"])
    func validVersions(version: String) {
        #expect(Semver.isValid(version))
    }

    @Test(arguments: ["", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b", "a.b.c", " 1.2.3", "1.2.3 ", "1.2.-3"])
    func invalidVersions(version: String) {
        #expect(!Semver.isValid(version))
    }

    // MARK: Batches

    @Test func batchesDecodeInOrder() throws {
        let text = #"[{"type":"Ping","index":0,"ack":4,"resendMissing":true},{"type":"ScopeFetchReply","index":5,"replyTo":2,"scopeIndex":1},{"type":"ScopeSyncReply","index":6,"replyTo":3,"fragmentReplies":[]}]"#
        let messages = try MessageFrame.decode(text)
        #expect(messages.map(\.index) == [0, 5, 6])
        #expect(messages.map(\.typeName) == ["Ping", "ScopeFetchReply", "ScopeSyncReply"])
        #expect(try MessageFrame.decode(Array(text.utf8)) == messages)
        #expect(try MessageFrame.decode(Data(text.utf8)) == messages)
        #expect(try MessageFrame.decode(JSON(parsing: text)) == messages)
        #expect(try MessageFrame.decode("[]").isEmpty)
        let encoded = MessageFrame.encode(messages, asArray: false) // several messages always go as an array
        #expect(try MessageFrame.decode(encoded) == messages)
        #expect(try JSON(parsing: encoded).arrayValue?.count == 3)
    }

    @Test func aBadBatchElementNamesItsPosition() throws {
        let text = #"[{"type":"Ping","index":0,"ack":1,"resendMissing":false},{"type":"Ping","index":0},{"type":"Nope","index":0}]"#
        let error = wireError(text)
        #expect(error == .batchElement(position: 1, error: .invalidMessage(type: "Ping", reason: "Invalid ack")))
        #expect(error?.underlying == .invalidMessage(type: "Ping", reason: "Invalid ack"))
        #expect(error?.description == "batch element 1: invalid Ping: Invalid ack")
        #expect(wireError("[1]") == .batchElement(position: 0, error: .invalidMessage(type: nil, reason: "Message is not an object")))

        let each = try MessageFrame.decodeEach(JSON(parsing: text))
        #expect(each.count == 3)
        #expect(try each[0].get() == .ping(Ping(ack: 1)))
        #expect(throws: WireError.invalidMessage(type: "Ping", reason: "Invalid ack")) { try each[1].get() }
        #expect(throws: WireError.unknownMessageType("Nope")) { try each[2].get() }
        #expect(try MessageFrame.decodeEach(JSON(parsing: #"{"type":"Ping","index":0,"ack":2}"#)).count == 1)
        #expect(throws: WireError.self) { try MessageFrame.decodeEach(.string("x")) }
    }

    @Test func encodingShapes() throws {
        let ping = Message.ping(Ping(ack: 3))
        #expect(MessageFrame.encode([ping], asArray: false, sortedKeys: true) == #"{"ack":3,"index":0,"resendMissing":false,"type":"Ping"}"#)
        #expect(MessageFrame.encode([ping], asArray: true, sortedKeys: true) == #"[{"ack":3,"index":0,"resendMissing":false,"type":"Ping"}]"#)
        #expect(MessageFrame.encode([], asArray: false) == "[]")
        // Sorted keys: two dictionaries with the same members may list them in different orders.
        #expect(MessageFrame.encodedBytes([ping], asArray: true, sortedKeys: true)
            == Array(MessageFrame.encode([ping], asArray: true, sortedKeys: true).utf8))
    }

    @Test func frameLimitsApply() {
        let error = wireError(String(repeating: "[", count: 600))
        #expect(error == .malformedJSON(JSONError(offset: 512, reason: "nesting deeper than 512 levels")))
        #expect(throws: WireError.malformedJSON(JSONError(offset: 4, reason: "input is larger than 4 bytes"))) {
            try MessageFrame.decode(#"{"type":"Ping"}"#, limits: JSONLimits(maxBytes: 4))
        }
    }

    @Test func randomFramesOnlyThrow() {
        var rng = SeededGenerator(seed: 2024)
        let pieces = [#"{"type":"#, #""Ping""#, #""ScopeSync""#, #""ScopeState""#, #""SessionCreate""#, #","index":"#, "0", "1", "-1",
                      #","ack":"#, #","fragments":["#, "]", "}", "[", #","scopeIndex":"#, #","version":"0.2.0""#, #","procedure":"A.b""#,
                      #","atomic":true"#, #"{"type":"add","uuid":"6f1c4b7e-0d1a-4c55-9a7e-3b2f1e0d9c8a","clsName":"X"}"#, ","]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 1...12, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
            do {
                let messages = try MessageFrame.decode(text)
                #expect(try MessageFrame.decode(MessageFrame.encode(messages, asArray: true)) == messages)
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
    }

    // MARK: Error constants

    @Test func typedServerErrors() {
        #expect(WireErrorBody.rejected == WireErrorBody(message: "Connection was rejected", type: "rejected"))
        #expect(WireErrorBody.unrecognizedHandshake.type == "unrecognized-handshake")
        #expect(WireErrorBody.unrecognizedHandshake.message == "Unrecognized handshake, should send SessionCreate message as first and only message")
        #expect(WireErrorBody.sessionTokenUnrecognized == WireErrorBody(message: "Session token unrecognized", type: "session-token-unrecognized"))
        #expect(WireErrorBody.sessionEstablishTimedOut == WireErrorBody(message: "Session took long to establish and timed out", type: "session-establish-timedout"))
        #expect(WireErrorBody.scopeIndexNotFound(3) == WireErrorBody(message: "Scope at index 3 was not found", type: "scope-index-not-found"))
        #expect(WireErrorBody.couldNotApplySyncMessage("No root model set")
                == WireErrorBody(message: "Could not apply SyncMessage: No root model set", type: "could-not-apply-sync-message"))
        #expect(WireErrorBody.sessionCreationDenied == WireErrorBody(message: "Session creation denied"))
        #expect(WireErrorBody.rejected.jsonString == #"{"message":"Connection was rejected","type":"rejected"}"#)
        #expect(WireErrorBody(message: "m").jsonString == #"{"message":"m"}"#)
        #expect(WireErrorBody.badInput("x").type == "bad-input")
        #expect(WireErrorBody.limitExceeded("x").type == "limit-exceeded")
        #expect(WireErrorBody(json: ["message": "m", "type": nil]) == WireErrorBody(message: "m"))
        #expect(WireErrorBody(json: ["message": "m", "type": 3]) == nil)
    }

    @Test func errorBodyCodable() throws {
        let body = WireErrorBody.scopeIndexNotFound(1)
        #expect(try JSONDecoder().decode(WireErrorBody.self, from: JSONEncoder().encode(body)) == body)
        let untyped = try JSON(parsing: JSONEncoder().encode(WireErrorBody(message: "m")))
        #expect(untyped == ["message": "m"])
    }

    @Test func closeCodes() {
        #expect(JetstreamCloseCode.denied == 4096)
        #expect(JetstreamCloseCode.expired == 4097)
        #expect(JetstreamCloseCode.badInput == 4098)
    }

    @Test func jetstreamMessages() {
        #expect(WireError.malformedJSON(JSONError(offset: 0, reason: "x")).jetstreamMessage == "Could not parse message input, input was not JSON")
        #expect(WireError.unknownMessageType("X").jetstreamMessage == "Unrecognized message type")
        #expect(WireError.invalidMessage(type: "SessionCreate", reason: "Requires valid version").jetstreamMessage == "Requires valid version")
        #expect(WireError.batchElement(position: 2, error: .unknownMessageType("X")).jetstreamMessage == "Unrecognized message type")
        #expect(WireError.malformedJSON(JSONError(offset: 3, reason: "unexpected '}'")).description == "frame is not valid JSON: unexpected '}' at byte 3")
        #expect(WireError.invalidFragment(index: 2, reason: "Invalid uuid").description == "invalid sync fragment 2: Invalid uuid")
    }
}
