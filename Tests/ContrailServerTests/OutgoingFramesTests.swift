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
}
