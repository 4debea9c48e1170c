import Contrail
import Foundation
import Testing

/// A model whose local properties hold objects (a selection, a clipboard): app state, not scope state.
final class Desk: ModelObject {
    @Property var shapes: [Shape] = []
    @Property(local: true) var selection: Shape? = nil
    @Property(local: true) var clipboard: [Shape] = []
}

@MainActor
@Suite struct ModelTreeTests {
    @Test func localReferencesNeverMakeScopeMembersOrFragments() throws {
        let scope = Scope(name: "desk")
        let desk = Desk()
        scope.root = desk
        scope.flush()
        let scratch = Shape(), copied = Shape()
        desk.selection = scratch
        desk.clipboard = [copied]
        #expect(scope.flush() == nil, "local edits record nothing")
        #expect(scratch.scope == nil && copied.scope == nil && scope.count == 1)
        #expect(!scope.snapshot().contains { $0.uuid == scratch.uuid || $0.uuid == copied.uuid })
        // Positive control: a synced collection makes the same object a member, with an add.
        desk.shapes.append(scratch)
        #expect(scope.flush()?.fragments.contains { $0.uuid == scratch.uuid && $0.kind == .add } == true)
        #expect(scratch.scope === scope)
        // Leaving the synced collection takes it out of the scope, though the local selection still holds it.
        desk.shapes.removeAll()
        scope.flush()
        #expect(scratch.scope == nil && scope.count == 1)
        scratch.x = 42
        #expect(scope.flush() == nil, "its edits are not synced")
    }

    @Test func attachingSubtreeAttachesAllAndFiresObservers() async {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let shape = Shape()
        let counter = Counter()
        shape.observeAttach(counter) { s in counter.events.append("attach \(s.name)") }
        shape.observeDetach(counter) { s in counter.events.append("detach \(s.name)") }
        canvas.shapes.append(shape)
        #expect(shape.scope === scope)
        #expect(scope.object(for: shape.uuid) === shape)
        canvas.shapes = []
        #expect(shape.scope == nil)
        #expect(scope.object(for: shape.uuid) == nil)
        #expect(counter.events == ["attach s", "detach s"])
    }

    @Test func modelInTwoCollectionsDetachesOnlyWhenRemovedFromBoth() async {
        let scope = Scope(name: "s")
        let root = Node()
        let left = Node(), right = Node(), shared = Node()
        root.children = [left, right]
        scope.root = root
        left.children = [shared]
        right.children = [shared]
        #expect(shared.parents.count == 2)
        left.children = []
        #expect(shared.scope === scope)
        right.children = []
        #expect(shared.scope == nil)
    }

    @Test func cycleAttachesOnceAndDetaches() async {
        let scope = Scope(name: "s")
        let root = Node()
        scope.root = root
        let a = Node(), b = Node()
        a.next = b
        b.next = a
        var attaches = 0
        let counter = Counter()
        a.observeAttach(counter) { _ in attaches += 1 }
        root.children = [a]
        #expect(attaches == 1)
        #expect(a.scope === scope && b.scope === scope)
        root.children = []
        #expect(a.scope == nil && b.scope == nil)
    }

    @Test func defaultChildrenAreLinked() async {
        final class Holder: ModelObject {
            @Property var node: Node? = Node()
        }
        let scope = Scope(name: "s")
        let holder = Holder()
        scope.root = holder
        let node = try! #require(holder.node)
        #expect(node.scope === scope)
        holder.node = nil
        #expect(node.scope == nil)
    }

    @Test func unknownClassIsATypedError() async {
        #expect(throws: ModelError.unknownClass("NoSuchClass")) {
            _ = try ModelRegistry.make(className: "NoSuchClass", uuid: UUID())
        }
    }

    @Test func registryCreatesReachableClasses() async throws {
        ModelRegistry.register(Canvas.self)
        let uuid = UUID()
        let shape = try ModelRegistry.make(className: "Shape", uuid: uuid)
        #expect(shape is Shape)
        #expect(shape.uuid == uuid)
    }
}
