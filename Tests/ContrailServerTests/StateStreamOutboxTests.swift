@testable import ContrailServer
import Contrail
import Foundation
import Testing

/// The server's side of `ScopeStateChunk` (Protocol §8.25) in the session outbox: parts are
/// numbered as acknowledgements make room (the resend buffer holds a window, never the whole
/// state), messages queued meanwhile go out between them, and a resend brings the unacknowledged ones.
@Suite("State streams in the session outbox") struct StateStreamOutboxTests {
    /// `count` objects as fragments, the root first.
    func fragments(_ count: Int) -> [SyncFragment] {
        (0..<count).map { n in
            SyncFragment(kind: n == 0 ? .change : .add, uuid: UUID(), className: "Tile",
                         properties: ["a": .int(Int64(n)), "pad": .string(String(repeating: "x", count: 100))])
        }
    }

    @Test func partsCoverTheStateInOrderWithinTheirBounds() throws {
        let state = fragments(105)
        let parts = ScopeStateChunk.parts(of: state, maxObjects: 20, maxBytes: 1 << 20)
        #expect(parts.map(\.count) == [20, 20, 20, 20, 20, 5])
        #expect(parts.map(\.offset) == [0, 20, 40, 60, 80, 100])
        let decoded = try parts.flatMap { part in try (JSON(parsing: part.text).arrayValue ?? []).map { try SyncFragment(json: $0) } }
        #expect(decoded == state)
        let bySize = ScopeStateChunk.parts(of: state, maxObjects: 1_000, maxBytes: 1_000)
        #expect(bySize.count > 10 && bySize.allSatisfy { $0.text.utf8.count < 1_000 + 300 })
        #expect(bySize.reduce(0) { $0 + $1.count } == 105)
    }

    @Test func partsAreReleasedAsAcknowledgementsMakeRoom() {
        let parts = ScopeStateChunk.parts(of: fragments(200), maxObjects: 10, maxBytes: 1 << 20)   // 20 parts of ~1.8 KB
        let outbox = SessionOutbox(limitBytes: 16 << 10, onEnd: { _ in Issue.record("overflow") })   // budget 8 KiB
        _ = outbox.attach({}, resumed: false)
        outbox.enqueueStream(StateStream(scopeIndex: 0, rootUUID: "r", parts: parts))
        var sent = outbox.takePending(generation: 1)
        #expect(sent.count >= 2 && sent.count <= 5, "a window of parts: \(sent.count)")
        #expect(outbox.unackedBytes <= outbox.streamBudget)
        // A broadcast queued now goes out before the parts not yet numbered.
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[]") }
        sent += outbox.takePending(generation: 1)
        var acked = 0
        while outbox.unsentParts > 0 {
            acked = sent.last?.index ?? acked
            outbox.acknowledge(acked)
            let next = outbox.takePending(generation: 1)
            #expect(!next.isEmpty)
            sent += next
        }
        #expect(sent.map(\.index) == Array(1...21))
        let offsets = sent.compactMap { message -> Int? in
            if case .scopeStateChunk(_, _, _, let total, let part) = message, total == 200 { return part.offset }
            return nil
        }
        #expect(offsets == Array(stride(from: 0, to: 200, by: 10)))
        #expect(sent.contains { if case .scopeSync = $0 { true } else { false } })
    }

    /// A part over the budget still goes when no other part is under way, even though the fetch
    /// reply before it waits for its acknowledgement; the next waits for the part's.
    @Test func aPartLargerThanTheBudgetGoesAlone() {
        let big = [SyncFragment(kind: .change, uuid: UUID(), className: "Tile", properties: ["pad": .string(String(repeating: "x", count: 20_000))])]
        let parts = ScopeStateChunk.parts(of: big + fragments(10), maxObjects: 1, maxBytes: 1 << 20)
        let outbox = SessionOutbox(limitBytes: 16 << 10, onEnd: { _ in Issue.record("overflow") })
        _ = outbox.attach({}, resumed: false)
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[]") }
        outbox.enqueueStream(StateStream(scopeIndex: 0, rootUUID: "r", parts: parts))
        #expect(outbox.takePending(generation: 1).map(\.index) == [1, 2])
        outbox.acknowledge(1)
        #expect(outbox.takePending(generation: 1).isEmpty, "the big part is still under way")
        outbox.acknowledge(2)
        #expect(outbox.takePending(generation: 1).count >= 2)
    }

    @Test func resendBringsTheUnacknowledgedPartsAndCancelDropsTheRest() {
        let parts = ScopeStateChunk.parts(of: fragments(100), maxObjects: 10, maxBytes: 1 << 20)
        let outbox = SessionOutbox(limitBytes: 16 << 10, onEnd: { _ in })
        _ = outbox.attach({}, resumed: false)
        outbox.enqueueStream(StateStream(scopeIndex: 3, rootUUID: "r", parts: parts))
        let first = outbox.takePending(generation: 1)
        // The connection drops; the client resumes having acknowledged the first part only.
        _ = outbox.attach({}, resumed: true)
        outbox.resend(after: 1)
        let resent = outbox.takePending(generation: 2)
        #expect(resent.dropFirst().map(\.index).prefix(first.count - 1) == first.dropFirst().map(\.index)[...])
        outbox.cancelStreams(scopeIndex: 3)
        #expect(outbox.unsentParts == 0)
    }
}
