@testable import ContrailServer
import Contrail
import Foundation
import Testing

/// What a session's writer sends: the messages queued for a reader coalesced into as few frames
/// (JSON arrays, §1.2) as the size bound allows, in order, each decoding to the same messages.
@Suite("Coalesced outgoing frames") struct OutgoingFramesTests {
    private func messages(_ count: Int) -> [OutgoingMessage] {
        (1...count).map { n in
            n % 10 == 0 ? .message(.ping(Ping(ack: n, resendMissing: false)))
                : .scopeSync(index: n, scopeIndex: 1, fragments: #"[{"type":"change","uuid":"u","clsName":"Shape","properties":{"x":\#(n)}}]"#)
        }
    }

    /// The `index` of every message in `frames`, in order (0 for a ping), checking each frame is a JSON array.
    private func indices(_ frames: [String]) throws -> [Int] {
        try frames.flatMap { frame -> [Int] in
            let elements = try #require(try JSON(parsing: frame).arrayValue)
            return elements.map { element in
                element["type"]?.stringValue == "Ping" ? 0 : Int(element["index"]?.int64Value ?? -1)
            }
        }
    }

    @Test func messagesCoalesceIntoOneFrameInOrder() throws {
        let queued = messages(50)
        let frames = OutgoingMessage.frames(queued, maxBytes: 1 << 20)
        #expect(frames.count == 1)
        #expect(try indices(frames) == queued.map { $0.index })
        #expect(try JSON(parsing: frames[0]) == JSON(parsing: OutgoingMessage.frame(queued)), "the same messages as one frame written at once")
    }

    @Test func framesSplitAtTheBoundAndKeepTheOrder() throws {
        let queued = messages(50)
        let frames = OutgoingMessage.frames(queued, maxBytes: 400)
        #expect(frames.count > 5)
        #expect(frames.allSatisfy { $0.utf8.count <= 400 })
        #expect(try indices(frames) == queued.map { $0.index })
        // A message larger than the bound gets a frame of its own, between the others.
        let big = OutgoingMessage.scopeSync(index: 51, scopeIndex: 1, fragments: "[\"" + String(repeating: "x", count: 1_000) + "\"]")
        let mixed = OutgoingMessage.frames(Array(queued.prefix(3)) + [big] + [queued[3]], maxBytes: 400)
        #expect(mixed.count == 3)
        #expect(try indices(mixed) == [1, 2, 3, 51, 4])
    }

    @Test func aBroadcastCarriesItsOriginOnlyWhenThereIsOne() throws {
        let told = OutgoingMessage.broadcast(index: 3, scopeIndex: 2, fragments: "[]", origin: #"{"session":1,"user":"a"}"#)
        let untold = OutgoingMessage.broadcast(index: 4, scopeIndex: 2, fragments: "[]", origin: nil)
        let elements = try #require(try JSON(parsing: OutgoingMessage.frame([told, untold])).arrayValue)
        #expect(elements.map { $0["type"]?.stringValue } == ["ScopeSync", "ScopeSync"])
        #expect(elements[0]["origin"]?["user"]?.stringValue == "a")
        #expect(elements[1]["origin"] == nil)
        #expect(elements.map { $0["index"]?.int64Value } == [3, 4])
        #expect(told.index == 3 && untold.index == 4)
        #expect(told.estimatedSize == untold.estimatedSize + #"{"session":1,"user":"a"}"#.utf8.count)
    }

    /// Every broadcast is stored twice per reader (resend buffer and next frame) until the client
    /// acknowledges it: the common case stays small (the rare, large cases are boxed).
    @Test func aQueuedMessageTakesAtMostFortyBytes() {
        #expect(MemoryLayout<OutgoingMessage>.stride <= 40)
    }

    /// Frames are written at their computed size: byte for byte what writing each message into a
    /// string gives, for broadcasts (multi-byte text too), a broadcast with its origin, other messages
    /// and large indices, and a frame of exactly the bound is not split.
    @Test func framesAreByteForByteTheMessagesWrittenOneByOne() {
        let queued: [OutgoingMessage] = [
            .scopeSync(index: 1, scopeIndex: 0, fragments: #"[{"type":"change","uuid":"ü","clsName":"Shape","properties":{"label":"日本 🚀"}}]"#),
            .broadcast(index: 2, scopeIndex: 12, fragments: "[]", origin: #"{"session":1,"user":"a"}"#),
            .message(.ping(Ping(ack: 7, resendMissing: false))),
            .scopeSync(index: 1_234_567_890_123, scopeIndex: 10, fragments: "[]"),
            .scopeState(index: 10, scopeIndex: 3, rootUUID: "r", fragments: "[]"),
        ]
        let whole = OutgoingMessage.frame(queued)
        #expect(OutgoingMessage.frames(queued, maxBytes: 1 << 20) == [whole])
        for message in queued {
            #expect(OutgoingMessage.frames([message], maxBytes: 1 << 20) == [OutgoingMessage.frame([message])])
        }
        #expect(OutgoingMessage.frames(queued, maxBytes: whole.utf8.count) == [whole])
        let split = OutgoingMessage.frames(queued, maxBytes: whole.utf8.count - 1)
        #expect(split.count == 2)
        #expect(split.allSatisfy { $0.utf8.count < whole.utf8.count })
        #expect(split.joined().utf8.count == whole.utf8.count + 1, "one comma less, one \"][\" more")
    }

    /// A reply accepting every fragment as sent is kept inline and written byte by byte: it decodes to
    /// the same message as the whole `ScopeSyncReply` (any number of fragments, large indices), alone
    /// and among broadcasts; a reply with an error, a modification or a repeat stays whole.
    @Test func anAcceptingReplyIsInlineAndDecodesToTheWholeReply() throws {
        for fragments in [0, 1, 3] {
            let reply = ScopeSyncReply(index: 1_234_567, replyTo: 98_765, fragmentReplies: Array(repeating: .accepted, count: fragments))
            let inline = OutgoingMessage.syncReply(reply)
            guard case .syncAccepted = inline else { Issue.record("not inline: \(inline)"); continue }
            #expect(inline.index == 1_234_567)
            #expect(inline.syncReply == reply)
            let queued: [OutgoingMessage] = [.scopeSync(index: 1, scopeIndex: 0, fragments: "[]"), inline, .message(.ping(Ping(ack: 2, resendMissing: false)))]
            let frame = try #require(OutgoingMessage.frames(queued, maxBytes: 1 << 20).first)
            #expect(frame == OutgoingMessage.frame(queued), "written at its computed size, byte for byte as written one by one")
            let decoded = try #require(try JSON(parsing: frame).arrayValue)
            #expect(decoded[1] == reply.json)
            #expect(try JSON(parsing: OutgoingMessage.frame([inline])) == JSON(parsing: OutgoingMessage.frame([.message(.scopeSyncReply(reply))])))
        }
        // Control: every other reply stays whole.
        let others = [
            ScopeSyncReply(index: 2, replyTo: 3, fragmentReplies: [.accepted, .rejected(WireErrorBody(message: "no"))]),
            ScopeSyncReply(index: 2, replyTo: 3, fragmentReplies: [FragmentReply(modifications: ["x": 1])]),
            ScopeSyncReply(index: 2, replyTo: 3, fragmentReplies: [.accepted], repeated: true),
        ]
        for reply in others {
            guard case .message(.scopeSyncReply(reply)) = OutgoingMessage.syncReply(reply) else {
                Issue.record("inline: \(reply)")
                continue
            }
            #expect(OutgoingMessage.syncReply(reply).syncReply == reply)
        }
    }
}
