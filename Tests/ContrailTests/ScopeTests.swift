import Contrail
import ContrailTestSupport
import Foundation
import Testing

@MainActor
@Suite struct ScopeTests {
    func makeScope() -> (Scope, Canvas) {
        let scope = Scope(name: "Canvas")
        let canvas = Canvas()
        scope.root = canvas
        return (scope, canvas)
    }

    @Test func addThenChangeGivesOneAddAndOneChange() async throws {
        let (scope, canvas) = makeScope()
        var sets: [ChangeSet] = []
        let counter = Counter()
        scope.onChanges(counter) { sets.append($0) }
        let shape = Shape()
        canvas.shapes.append(shape)
        shape.x = 5
        await ChangeDelivery.main.drain()
        #expect(sets.count == 1)
        let fragments = sets[0].fragments
        #expect(fragments.count == 2)
        let change = try! #require(fragments.first { $0.kind == .change })
        let add = try! #require(fragments.first { $0.kind == .add })
        #expect(change.uuid == canvas.uuid)
        #expect(change.properties == ["shapes": .array([.string(shape.uuid.uuidString.lowercased())])])
        #expect(add.className == "Shape" && add.uuid == shape.uuid)
        #expect(add.properties["x"] == .double(5))
        #expect(add.properties["isSelected"] == nil)
    }

    @Test func addThenRemoveCancelsOut() async throws {
        let (scope, canvas) = makeScope()
        canvas.shapes.append(Shape())
        canvas.shapes.removeAll()
        #expect(scope.flush() == nil)
    }

    @Test func localPropertiesAreNeverRecorded() async throws {
        let (scope, canvas) = makeScope()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.isSelected = true
        #expect(scope.flush() == nil)
    }

    @Test func lastValueWins() async throws {
        let (scope, canvas) = makeScope()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.x = 1
        shape.x = 2
        let set = try! #require(scope.flush())
        #expect(set.fragments == [SyncFragment(kind: .change, uuid: shape.uuid, className: "Shape", properties: ["x": .double(2)])])
    }

    @Test func atomicChangeSetIsOneSetWithFlag() async throws {
        let (scope, canvas) = makeScope()
        canvas.name = "before"
        let set = scope.modifyAtomically(message: "add") {
            canvas.name = "after"
            canvas.shapes.append(Shape())
        }
        #expect(set?.isAtomic == true)
        #expect(set?.message == "add")
        #expect(set?.fragments.count == 2)
    }

    @Test func applyingOntoAFreshScopeGivesAnEqualTree() async throws {
        let (scope, canvas) = makeScope()
        let replica = Scope(name: "Canvas")
        replica.root = Canvas(uuid: canvas.uuid)
        var sets: [ChangeSet] = []
        scope.onChanges(Counter()) { sets.append($0) }
        let counter = Counter()
        scope.onChanges(counter) { sets.append($0) }
        let a = Shape(), b = Shape()
        canvas.shapes = [a, b]
        canvas.highlighted = b
        a.x = 3
        scope.flush()
        b.color = .blue
        canvas.shapes.remove(at: 0)
        scope.flush()
        for set in sets { try replica.apply(set.fragments) }
        #expect(replica.stateJSON() == scope.stateJSON())
        #expect(replica.flush() == nil)
    }

    @Test func referencesToObjectsAddedLaterInTheBatchResolve() async throws {
        let replica = Scope(name: "s")
        let root = Node()
        replica.root = root
        let child = UUID()
        try replica.apply([
            SyncFragment(kind: .change, uuid: root.uuid, className: "Node", properties: ["next": .string(child.uuidString)]),
            SyncFragment(kind: .add, uuid: child, className: "Node", properties: ["label": .string("child")]),
        ])
        #expect(root.next?.uuid == child)
        #expect(root.next?.label == "child")
        #expect(root.next?.scope === replica)
    }

    @Test func badBatchLeavesTreeUnchanged() async throws {
        let replica = Scope(name: "s")
        let root = Node()
        replica.root = root
        #expect(throws: ModelError.self) {
            try replica.apply([
                SyncFragment(kind: .change, uuid: root.uuid, className: "Node", properties: ["label": .string("changed")]),
                SyncFragment(kind: .change, uuid: root.uuid, className: "Node", properties: ["next": .string(UUID().uuidString)]),
            ])
        }
        #expect(root.label == "")
    }

    @Test func revertRestoresOriginals() async throws {
        let (scope, canvas) = makeScope()
        canvas.name = "a"
        scope.flush()
        canvas.name = "b"
        let set = try! #require(scope.flush())
        set.revert()
        #expect(canvas.name == "a")
        #expect(set.state == .reverted)
        #expect(scope.flush() == nil)
    }

    @Test func undoOnlyUndoesLocalChange() async throws {
        let (scope, canvas) = makeScope()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.x = 10
        scope.flush()
        try scope.apply([SyncFragment(kind: .change, uuid: shape.uuid, className: "Shape", properties: ["y": .double(7)])])
        let undo = try #require(scope.undo())
        #expect(shape.x == 0)
        #expect(shape.y == 7)
        #expect(undo.fragments.first?.properties == ["x": .double(0)])
        scope.redo()
        #expect(shape.x == 10)
    }
}

@MainActor
@Suite struct ScopeApplyTests {
    @Test func applyFiresObserversAndRecordsNothing() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let counter = Counter()
        try canvas.observeChangeImmediately(counter, \.name) { counter.count += 1 }
        var added: [Int] = []
        try canvas.observeCollectionAdd(counter, \.shapes) { _, index in added.append(index) }
        let shape = UUID()
        let report = try scope.apply([
            SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas",
                         properties: ["name": "remote", "shapes": .array([.string(shape.uuidString)])]),
            SyncFragment(kind: .add, uuid: shape, className: "Shape", properties: ["x": 4, "radius": 3]),
        ])
        #expect(counter.count == 1)
        #expect(added == [0])
        #expect(canvas.shapes.first?.x == 4)
        #expect(report.unknownProperties == ["Shape.radius"])
        #expect(scope.flush() == nil)
        #expect(scope.history.last?.origin == .remote)
    }

    @Test func wrongValueTypeIsATypedError() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        #expect(throws: ModelError.wrongType(property: "name", expected: "a string", got: "a number")) {
            try scope.apply([SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas", properties: ["name": 5])])
        }
    }

    /// An object of a class no model class is registered for is kept as it is while something
    /// references it (Protocol §8.23), and forgotten with the last reference, as the server drops it.
    @Test func unknownClassInABatchIsKeptWhileReferenced() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let hexagon = UUID()
        let report = try scope.apply([
            SyncFragment(kind: .add, uuid: hexagon, className: "Hexagon", properties: ["sides": 6]),
            SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas", properties: ["hexagon": .string(hexagon.wireString)]),
        ])
        #expect(report.appliedFragments == 2)
        #expect(scope.unknownObjects.map(\.uuid) == [hexagon])
        #expect(scope.unknownObjects.first?.properties == ["sides": 6])
        try scope.apply([SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas", properties: ["hexagon": .null])])
        #expect(scope.unknownObjects.isEmpty)
        // Unreferenced from the start: not kept (a server refuses such an add, "No parents").
        try scope.apply([SyncFragment(kind: .add, uuid: UUID(), className: "Hexagon", properties: [:])])
        #expect(scope.unknownObjects.isEmpty)
    }

    @Test func changeForUnknownObjectIsSkippedAndReported() async throws {
        let scope = Scope(name: "s")
        scope.root = Canvas()
        let stray = UUID()
        let report = try scope.apply([SyncFragment(kind: .change, uuid: stray, className: "Canvas", properties: ["name": "x"])])
        #expect(report.unknownObjects == [stray])
    }

    @Test func fullStateAdoptsRootUUIDDetachesStraysAndAppliesDefaults() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let stray = Shape()
        canvas.highlighted = stray
        canvas.name = "local"
        scope.flush()
        let serverRoot = UUID(), serverShape = UUID()
        try scope.applyState(rootUUID: serverRoot, fragments: [
            SyncFragment(kind: .change, uuid: serverRoot, className: "Canvas", properties: ["shapes": .array([.string(serverShape.uuidString)])]),
            SyncFragment(kind: .add, uuid: serverShape, className: "Shape", properties: ["x": 1]),
        ])
        #expect(canvas.uuid == serverRoot)
        #expect(scope.object(for: serverRoot) === canvas)
        #expect(canvas.name == nil)
        #expect(canvas.highlighted == nil)
        #expect(stray.scope == nil)
        #expect(canvas.shapes.map(\.uuid) == [serverShape])
        #expect(canvas.shapes.first?.width == 100)
    }

    @Test func changeSetsStreamAndSettle() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        scope.isSynced = true
        let stream = scope.changeSets()
        canvas.name = "a"
        await ChangeDelivery.main.drain()
        var iterator = stream.makeAsyncIterator()
        let set = try #require(await iterator.next())
        #expect(set.state == .syncing)
        var states: [ChangeSet.State] = []
        set.onStateChange(scope) { states.append($0) }
        Task { @MainActor in set.settle(.completed) }
        #expect(await set.settled() == .completed)
        #expect(states == [.completed])
    }

    @Test func changeSetJSONCarriesFragmentsAndFlags() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let set = try #require(scope.modifyAtomically(message: "rename") { canvas.name = "n" })
        #expect(set.json["atomic"] == true)
        #expect(set.json["message"] == "rename")
        #expect(set.json["state"] == "completed")
        #expect(set.json["fragments"]?[0]?["properties"] == ["name": "n"])
        let encoded = try JSONEncoder().encode(set)
        let decoded = try JSON(parsing: encoded)
        #expect(decoded["fragments"] == set.json["fragments"])
    }

    @Test func aFullStateResetsTheMinimumSyncInterval() throws {
        final class Dial: ModelObject {
            @Property(minSyncInterval: 10) var value = 0.0
        }
        let scope = Scope(name: "s")
        let dial = Dial()
        scope.root = dial
        dial.value = 1
        #expect(scope.flush() != nil)
        dial.value = 2
        #expect(scope.flush() == nil, "within the interval the edit is deferred")
        try scope.applyState(rootUUID: dial.uuid, fragments: [
            SyncFragment(kind: .change, uuid: dial.uuid, className: dial.className, properties: ["value": 5]),
        ])
        dial.value = 6
        #expect(scope.flush()?.fragments.first?.properties["value"] == .double(6), "after a full state it goes out at once")
    }

    @Test func minimumSyncIntervalDefersButKeepsTheLastValue() async throws {
        final class Slider: ModelObject {
            @Property(minSyncInterval: 0.05) var value = 0.0
        }
        let clock = TestClock()
        let scope = Scope(name: "s", clock: clock)
        let slider = Slider()
        scope.root = slider
        var sets: [ChangeSet] = []
        let counter = Counter()
        scope.onChanges(counter) { sets.append($0) }
        slider.value = 1
        scope.flush()
        clock.advance(by: .milliseconds(10))
        slider.value = 2
        slider.value = 3
        #expect(scope.flush() == nil)
        // The deferred value is recorded once the interval (from the first recording) has passed:
        // not 1 ms before, then at once.
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .milliseconds(39))
        await ChangeDelivery.main.drain()
        #expect(sets.count == 1)
        clock.advance(by: .milliseconds(1))
        let recorded = await eventually { sets.count == 2 }
        #expect(recorded)
        #expect(sets.map { $0.fragments.first?.properties["value"] } == [.double(1), .double(3)])
    }
}
