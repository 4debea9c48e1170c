@testable import Contrail
import Foundation
import Testing

/// A full state's new objects made ready part by part while it streams in (``PreparedState``,
/// Protocol §8.25): nothing shows before the state is applied, the apply takes them where it would
/// have created them itself, and the outcome is the same as applying the state whole.
@MainActor
@Suite struct PreparedStateTests {
    let root = UUID(), first = UUID(), second = UUID()

    /// A state of a canvas with two shapes; the second has a property this app does not know.
    var state: [SyncFragment] {
        [
            SyncFragment(kind: .change, uuid: root, className: "Canvas",
                         properties: ["name": "drawing", "shapes": .array([.string(first.wireString), .string(second.wireString)]),
                                      "highlighted": .string(second.wireString)]),
            SyncFragment(kind: .add, uuid: first, className: "Shape", properties: ["x": 1, "kind": "circle"]),
            SyncFragment(kind: .add, uuid: second, className: "Shape", properties: ["x": 2, "y": 3, "shade": "dark"]),
        ]
    }

    func makeScope() -> (Scope, Canvas) {
        ModelRegistry.register(Canvas.self, Shape.self)
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        return (scope, canvas)
    }

    /// A value as text, objects as their UUIDs.
    func describe(_ value: Any) -> String {
        if let object = value as? ModelObject { return object.uuid.wireString }
        if let objects = value as? [ModelObject] { return objects.map(\.uuid.wireString).joined(separator: ",") }
        return "\(value)"
    }

    /// The state's changes as (object UUID, property name, new value's description), in order.
    func record(_ scope: Scope) -> () -> [String] {
        var seen: [String] = []
        let token = scope.onChanges(scope) { changeSet in
            seen += changeSet.changes.map { "\($0.object.uuid) \($0.object.info.properties[$0.property].name) \(describe($0.new))" }
        }
        return {
            _ = token
            return seen
        }
    }

    @Test func preparedObjectsAreTakenAndTheOutcomeMatchesAWholeApply() throws {
        let (plainScope, plainCanvas) = makeScope()
        let plainChanges = record(plainScope)
        try plainScope.applyState(rootUUID: root, fragments: state)

        let (scope, canvas) = makeScope()
        let changes = record(scope)
        var prepared = PreparedState()
        prepared.prepare(Array(state[..<2]), offset: 0, in: scope)
        prepared.prepare(Array(state[2...]), offset: 2, in: scope)
        #expect(prepared.count == 2, "the two adds; the root's change is left to the apply")
        #expect(canvas.shapes.isEmpty && scope.count == 1 && changes().isEmpty, "nothing shows before the apply")
        _ = try scope.applyState(rootUUID: root, fragments: state, redirect: nil, prepared: prepared)

        #expect(canvas.shapes.map(\.uuid) == [first, second])
        #expect(canvas.shapes[0] === prepared.entry(at: 1)?.object && canvas.shapes[1] === prepared.entry(at: 2)?.object)
        #expect(canvas.highlighted === canvas.shapes[1])
        #expect(canvas.shapes.map(\.x) == [1, 2] && canvas.shapes[1].y == 3 && canvas.shapes[0].kind == .circle)
        #expect(scope.unknownValues(of: canvas.shapes[1]) == ["shade": "dark"])
        #expect(scope.count == plainScope.count && canvas.name == plainCanvas.name)
        let expected = plainChanges()
        #expect(changes() == expected, "the same changes, in the same order")
        #expect(!expected.isEmpty)
    }

    /// An object the scope came to hold between a part and the apply (the app made one with that
    /// UUID) is the one the state's values go to: the prepared one is left.
    @Test func anObjectTheScopeHoldsByThenWinsOverThePreparedOne() throws {
        let (scope, canvas) = makeScope()
        var prepared = PreparedState()
        prepared.prepare(state, offset: 0, in: scope)
        let local = Shape(uuid: first)
        canvas.shapes = [local]
        scope.flush()
        _ = try scope.applyState(rootUUID: root, fragments: state, redirect: nil, prepared: prepared)
        #expect(canvas.shapes.first === local)
        #expect(local.x == 1 && local.kind == .circle, "decoded at the apply, as without preparation")
        #expect(canvas.shapes.last === prepared.entry(at: 2)?.object, "the other prepared object is taken")
    }

    /// A value that does not decode is not prepared: the apply refuses the state with the error it
    /// gives without preparation, and the scope is left as it was.
    @Test func aBadValueIsRefusedAtTheApplyAsWithoutPreparation() throws {
        var bad = state
        bad[1].properties["x"] = "not a number"
        let (scope, canvas) = makeScope()
        var prepared = PreparedState()
        prepared.prepare(bad, offset: 0, in: scope)
        #expect(prepared.entry(at: 1) != nil)
        #expect(throws: ModelError.self) { try scope.applyState(rootUUID: root, fragments: bad, redirect: nil, prepared: prepared) }
        #expect(canvas.shapes.isEmpty && canvas.name == nil)
        // Positive control: the good state applies.
        try scope.applyState(rootUUID: root, fragments: state)
        #expect(canvas.shapes.count == 2)
    }
}
