@testable import Contrail
@testable import ContrailWire
import Foundation
import Testing

/// A key that pending local change sets hold shows, after a remote value arrives, what the server
/// will reach: the remote value with each pending change set's sent value on top (Protocol §8.3).
@MainActor
@Suite("Pending edits replayed onto remote values")
struct PendingReplayTests {
    /// A synced scope whose local change sets queue as they would in a session.
    private func subscribed() -> (Scope, Canvas, ScopeSubscription) {
        ModelRegistry.register(Canvas.self, Shape.self)
        let scope = Scope(name: "Canvas")
        let canvas = Canvas()
        scope.root = canvas
        scope.isSynced = true
        let subscription = ScopeSubscription(scope: scope, params: [:], mode: .realtime)
        subscription.listen { [unowned subscription] in subscription.queue.append($0) }
        return (scope, canvas, subscription)
    }

    private func shapes(_ canvas: Canvas, _ uuids: [UUID]) -> SyncFragment {
        SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas",
                     properties: ["shapes": .array(uuids.map { .string($0.wireString) })])
    }

    private func addShape(_ uuid: UUID, x: Double) -> SyncFragment {
        SyncFragment(kind: .add, uuid: uuid, className: "Shape", properties: ["x": .double(x)])
    }

    /// An undo changed the shape while another client had taken it out of the tree, so the undo sent
    /// nothing for it; the pending change set still sends x = 1, and the server will end there.
    @Test func aHeldScalarShowsThePendingSentValueNotTheLocalOne() throws {
        let (scope, canvas, subscription) = subscribed()
        let uuid = UUID()
        #expect(subscription.applyRemote([addShape(uuid, x: 0), shapes(canvas, [uuid])]))
        let shape = try #require(canvas.shapes.first)
        shape.x = 1
        scope.flush()
        #expect(subscription.queue.count == 1)

        #expect(subscription.applyRemote([shapes(canvas, [])]))
        #expect(shape.scope == nil)
        scope.undo()
        #expect(shape.x == 0, "the undo restored the detached shape's value")

        #expect(subscription.applyRemote([addShape(uuid, x: 0), shapes(canvas, [uuid])]))
        #expect(canvas.shapes.first === shape, "the same object comes back")
        #expect(shape.x == 1, "the pending change set still sends x = 1")
    }

    /// Positive control: a key no pending change set holds takes the remote value.
    @Test func aKeyNobodyHoldsTakesTheRemoteValue() throws {
        let (scope, canvas, subscription) = subscribed()
        let uuid = UUID()
        #expect(subscription.applyRemote([addShape(uuid, x: 0), shapes(canvas, [uuid])]))
        let shape = try #require(canvas.shapes.first)
        shape.y = 5
        scope.flush()
        #expect(subscription.applyRemote([SyncFragment(kind: .change, uuid: uuid, className: "Shape", properties: ["x": .double(7)])]))
        #expect(shape.x == 7 && shape.y == 5)
    }
}
