@testable import Contrail
@testable import ContrailWire
import Foundation
import Observation
import Synchronization
import Testing

/// `ModelObject` as `Observation.Observable`: what `withObservationTracking` (and so SwiftUI) sees.
@MainActor
@Suite struct ModelObservableTests {
    /// Counts `onChange` calls (which are `@Sendable`).
    final class Fires: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// Tracks what `read` reads; returns the counter of the tracking's `onChange`.
    func track(_ read: () -> Void) -> Fires {
        let fires = Fires()
        withObservationTracking(read) { fires.count.add(1, ordering: .relaxed) }
        return fires
    }

    @Test func localSetFiresOnceAndOnlyForTheReadProperty() {
        let shape = Shape()
        let fires = track { _ = shape.x }
        shape.y = 3
        #expect(fires.value == 0, "a property that was not read does not fire")
        shape.x = shape.x
        #expect(fires.value == 0, "a set that changes nothing does not fire")
        shape.x = 1
        #expect(fires.value == 1)
        shape.x = 2
        #expect(fires.value == 1, "a tracking fires once")
    }

    @Test func anotherObjectOfTheClassDoesNotFire() {
        let read = Shape(), other = Shape()
        let fires = track { _ = read.x }
        other.x = 5
        #expect(fires.value == 0)
        read.x = 5
        #expect(fires.value == 1)
    }

    @Test func remoteApplyFires() throws {
        let (scope, _, shape) = scopedShape()
        let fires = track { _ = shape.x }
        try scope.apply([SyncFragment(kind: .change, uuid: shape.uuid, className: "Shape", properties: ["y": 4])])
        #expect(fires.value == 0)
        try scope.apply([SyncFragment(kind: .change, uuid: shape.uuid, className: "Shape", properties: ["x": 4])])
        #expect(fires.value == 1)
        #expect(shape.x == 4)
    }

    @Test func undoAndRedoFire() throws {
        let (scope, _, shape) = scopedShape()
        shape.x = 10
        scope.flush()
        let undone = track { _ = shape.x }
        try #require(scope.undo() != nil)
        #expect(undone.value == 1)
        #expect(shape.x == 0)
        let redone = track { _ = shape.x }
        scope.redo()
        #expect(redone.value == 1)
        #expect(shape.x == 10)
    }

    @Test func revertFires() throws {
        let (scope, canvas, _) = scopedShape()
        canvas.name = "a"
        scope.flush()
        canvas.name = "b"
        let changeSet = try #require(scope.flush())
        let fires = track { _ = canvas.name }
        changeSet.revert()
        #expect(fires.value == 1)
        #expect(canvas.name == "a")
    }

    @Test func collectionMutationFires() {
        let canvas = Canvas()
        let fires = track { _ = canvas.shapes.count }
        canvas.shapes.append(Shape())
        #expect(fires.value == 1)
    }

    @Test func nestedObjectReadFiresForTheReadChildOnly() {
        let canvas = Canvas()
        let first = Shape(), second = Shape()
        canvas.shapes = [first, second]
        let fires = track { _ = canvas.shapes[0].x }
        second.x = 1
        #expect(fires.value == 0)
        first.x = 1
        #expect(fires.value == 1)
    }

    @Test func onlyTrackedObjectsGetARegistrar() {
        let (_, canvas, shape) = scopedShape()
        let detached = Shape()
        _ = detached.x
        _ = shape.x
        #expect(detached._tracking == nil, "an untracked read of a detached object creates nothing")
        #expect(shape._tracking?.observation == nil, "an untracked read allocates no registrar")
        _ = track { _ = shape.x }
        #expect(shape._tracking?.observation != nil)
        #expect(canvas._tracking?.observation == nil, "the parent was not read")
    }

    @Test func trackingKeepsWorkingAcrossProbeRotations() {
        let shape = Shape()
        for round in 0..<(2 * ObservationProbe.rotation + 3) {
            let fires = track { _ = shape.x }
            shape.x = Double(round + 1)
            #expect(fires.value == 1, "round \(round)")
        }
    }

    @Test func aTrackingThatNeverFiresIsReleasedByRotation() {
        weak var weakToken: Fires?
        ObservationProbe.replaceCurrent()
        do {
            let shape = Shape()
            let token = Fires()
            weakToken = token
            withObservationTracking { _ = shape.x } onChange: { token.count.add(1, ordering: .relaxed) }
        }
        #expect(weakToken != nil, "positive control: the probe's registrar still holds the unfired tracking")
        #expect(ObservationProbe.currentDetections == 1)
        let other = Shape()
        for _ in 0..<(ObservationProbe.rotation - 1) { _ = track { _ = other.x } }
        #expect(weakToken == nil)
    }
}

/// A scope whose root canvas holds one shape, flushed (nothing pending).
@MainActor
func scopedShape() -> (Scope, Canvas, Shape) {
    let scope = Scope(name: "s")
    let canvas = Canvas()
    let shape = Shape()
    canvas.shapes = [shape]
    scope.root = canvas
    scope.flush()
    return (scope, canvas, shape)
}
