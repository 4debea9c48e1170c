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

    /// A big state's parts come from a producer (§8.25 overlap): each goes out as soon as it is
    /// supplied, the stream waits for the next in between (messages queued meanwhile go out), a
    /// stream behind it waits for its last part, and a producer whose stream is gone is told to stop.
    @Test func producedPartsGoOutAsTheyArriveAndAGoneStreamStopsItsProducer() {
        let parts = ScopeStateChunk.parts(of: fragments(30), maxObjects: 10, maxBytes: 1 << 20)
        let outbox = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("overflow") })
        _ = outbox.attach({}, resumed: false)
        let id = StateStream.ID()
        outbox.enqueueStream(StateStream(scopeIndex: 0, rootUUID: "r", producedAs: id))
        outbox.enqueueStream(StateStream(scopeIndex: 1, rootUUID: "s", parts: parts))
        #expect(outbox.takePending(generation: 1).isEmpty, "nothing until the producer's first part")
        #expect(outbox.supply(parts[0], total: 30, finished: false, to: id))
        var sent = outbox.takePending(generation: 1)
        #expect(sent.count == 1)
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[]") }
        #expect(outbox.supply(parts[1], total: 30, finished: false, to: id))
        #expect(outbox.supply(parts[2], total: 30, finished: true, to: id))
        sent += outbox.takePending(generation: 1)
        let chunks = sent.compactMap { message -> (Int, Int, Int)? in
            if case .scopeStateChunk(_, let scopeIndex, _, let total, let part) = message { return (scopeIndex, total, part.offset) }
            return nil
        }
        #expect(chunks.map { $0.0 } == [0, 0, 0, 1, 1, 1], "the second state follows the first one's last part")
        #expect(chunks.prefix(3).map { $0.1 } == [30, 30, 30] && chunks.prefix(3).map { $0.2 } == [0, 10, 20])
        #expect(sent.map(\.index) == Array(1...7))
        #expect(sent.contains { if case .scopeSync = $0 { true } else { false } })
        // Positive control above; now a stream that is cancelled before its producer is done.
        let other = StateStream.ID()
        outbox.enqueueStream(StateStream(scopeIndex: 2, rootUUID: "t", producedAs: other))
        #expect(outbox.supply(parts[0], total: 30, finished: false, to: other))
        outbox.cancelStreams(scopeIndex: 2)
        #expect(!outbox.supply(parts[1], total: 30, finished: false, to: other), "the producer stops")
        #expect(!outbox.supply(parts[1], total: 30, finished: false, to: StateStream.ID()), "an unknown stream takes nothing")
    }

    /// A store streams its state from a snapshot: the parts, in order, hold exactly the fragments of
    /// ``ScopeStore/stateFragments()`` at the time of the copy, whatever the store does after it.
    @Test func aStoreStreamsItsSnapshotInParts() throws {
        let root = UUID()
        var store = ScopeStore(rootUUID: root)
        var core = ScopeCore(name: "s", limits: ServerOptions().limits, procedures: [])
        let items = (0..<95).map { _ in UUID() }
        let setup = [SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": .array(items.map { .string($0.wireString) })])]
            + items.enumerated().map { SyncFragment(kind: .add, uuid: $1, className: "Item", properties: ["n": .int(Int64($0))]) }
        _ = core.apply(ScopeSync(index: 1, scopeIndex: 0, fragments: setup), to: &store, from: nil)
        let snapshot = store
        let expected = snapshot.stateFragments()
        #expect(expected.count == 96)
        _ = core.apply(ScopeSync(index: 2, scopeIndex: 0, fragments: [SyncFragment(kind: .change, uuid: items[3], className: "Item", properties: ["n": -3])]),
                       to: &store, from: nil)
        let outbox = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("overflow") })
        _ = outbox.attach({}, resumed: false)
        let id = StateStream.ID()
        outbox.enqueueStream(StateStream(scopeIndex: 0, rootUUID: root.wireString, producedAs: id))
        snapshot.stream(to: outbox, as: id, maxObjects: 10, maxBytes: 1 << 20)
        var streamed: [SyncFragment] = []
        var offsets: [Int] = []
        for message in outbox.takePending(generation: 1) {
            guard case .scopeStateChunk(_, _, _, let total, let part) = message else { continue }
            #expect(total == 96)
            offsets.append(part.offset)
            streamed += try (JSON(parsing: part.text).arrayValue ?? []).map { try SyncFragment(json: $0) }
        }
        #expect(offsets == Array(stride(from: 0, to: 96, by: 10)))
        #expect(streamed == expected, "the snapshot's state, not the later change")
        #expect(outbox.unsentParts == 0)
        #expect(store.stateFragments() != expected, "positive control: the store itself moved on")
    }
}
