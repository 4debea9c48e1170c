import Contrail
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

    @Test func addThenChangeGivesOneAddAndOneChange() async {
        let (scope, canvas) = makeScope()
        var sets: [ChangeSet] = []
        let counter = Counter()
        scope.onChanges(counter) { sets.append($0) }
        let shape = Shape()
        canvas.shapes.append(shape)
        shape.x = 5
        await NotificationQueue.main.drain()
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

    @Test func addThenRemoveCancelsOut() async {
        let (scope, canvas) = makeScope()
        canvas.shapes.append(Shape())
        canvas.shapes.removeAll()
        #expect(scope.flush() == nil)
    }

    @Test func localPropertiesAreNeverRecorded() async {
        let (scope, canvas) = makeScope()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.isSelected = true
        #expect(scope.flush() == nil)
    }

    @Test func lastValueWins() async {
        let (scope, canvas) = makeScope()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.x = 1
        shape.x = 2
        let set = try! #require(scope.flush())
        #expect(set.fragments == [SyncFragment(kind: .change, uuid: shape.uuid, className: "Shape", properties: ["x": .double(2)])])
    }

    @Test func atomicChangeSetIsOneSetWithFlag() async {
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

    @Test func badBatchLeavesTreeUnchanged() async {
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

    @Test func revertRestoresOriginals() async {
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
