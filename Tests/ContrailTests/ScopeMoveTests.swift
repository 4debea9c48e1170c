import Contrail
import Foundation
import Testing

/// A replica that only ever sees what a scope sends: its snapshot, then every change set. Applying
/// a fragment that references an object the replica was never sent throws.
@MainActor
private final class Replica {
    let scope = Scope(name: "replica")
    private var sets: [ChangeSet] = []
    private let listener = Counter()

    init(of source: Scope) throws {
        let root = try #require(source.root)
        scope.root = type(of: root).init(uuid: root.uuid)
        try scope.apply(source.snapshot())
        source.onChanges(listener) { [unowned self] in sets.append($0) }
    }

    /// Applies what the source sent since the last call; returns its fragments.
    @discardableResult
    func catchUp() throws -> [SyncFragment] {
        let fragments = sets.flatMap(\.fragments)
        sets.removeAll()
        try scope.apply(fragments)
        return fragments
    }
}

/// Holds one node through a non-optional reference, which cannot let go of it, and others through
/// a collection, which can.
final class Mooring: ModelObject {
    @Property var fixed = Node()
    @Property var loose: [Node] = []
}

/// Notes attach and detach events with the scope's name.
@MainActor
private func watchScopes(_ objects: [ModelObject], into observer: Counter) {
    for object in objects {
        object.observeAttach(observer) { observer.events.append("attach \(object.uuid.uuidString.prefix(4)) \($0.name)") }
        object.observeDetach(observer) { observer.events.append("detach \(object.uuid.uuidString.prefix(4)) \($0.name)") }
    }
}

/// An object belongs to one scope at most: linking a member of another scope, or making it another
/// scope's root, moves it with everything below it, and the old scope drops its references to them.
@MainActor
@Suite struct ScopeMoveTests {
    private func twoScopes() async -> (a: Scope, b: Scope, rootA: Node, rootB: Node) {
        let a = Scope(name: "A"), b = Scope(name: "B")
        let rootA = Node(), rootB = Node()
        a.root = rootA
        b.root = rootB
        await ChangeDelivery.main.drain()
        return (a, b, rootA, rootB)
    }

    @Test func linkingAMemberOfAnotherScopeMovesItWithItsSubtree() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let moved = Node(), below = Node(), stays = Node()
        moved.children = [below]
        rootA.children = [moved, stays]
        rootA.next = below          // a second reference in A to something that moves
        await ChangeDelivery.main.drain()
        let replicaA = try Replica(of: a), replicaB = try Replica(of: b)
        #expect(a.count == 4 && b.count == 1)
        let observer = Counter()
        watchScopes([moved, below, stays], into: observer)

        rootB.children.append(moved)
        await ChangeDelivery.main.drain()

        // A dropped every reference to what moved; B holds it.
        #expect(rootA.children.map(\.uuid) == [stays.uuid] && rootA.next == nil)
        #expect(moved.scope === b && below.scope === b && stays.scope === a)
        #expect(moved.children.first === below)
        #expect(a.count == 2 && b.count == 3)
        #expect(a.snapshot().count == a.count && b.snapshot().count == b.count)
        let tag = { (node: Node) in String(node.uuid.uuidString.prefix(4)) }
        #expect(observer.events.sorted() == ["attach \(tag(below)) B", "attach \(tag(moved)) B",
                                             "detach \(tag(below)) A", "detach \(tag(moved)) A"].sorted())
        // Detached from A before attached to B.
        let lastDetach = try #require(observer.events.lastIndex { $0.hasPrefix("detach") })
        let firstAttach = try #require(observer.events.firstIndex { $0.hasPrefix("attach") })
        #expect(lastDetach < firstAttach)
        // A sent only its root's change; B sent adds for both and its root's change.
        let sentA = try replicaA.catchUp()
        #expect(sentA.map(\.kind) == [.change] && sentA.first?.uuid == rootA.uuid)
        let sentB = try replicaB.catchUp()
        #expect(Set(sentB.filter { $0.kind == .add }.map(\.uuid)) == [moved.uuid, below.uuid])
        #expect(sentB.contains { $0.kind == .change && $0.uuid == rootB.uuid })
        // Both replicas, fed only what their scope sent, hold their scope's tree.
        #expect(replicaA.scope.stateJSON() == a.stateJSON())
        #expect(replicaB.scope.stateJSON() == b.stateJSON())
    }

    @Test func aNestedObjectMadeRootOfAnotherScopeLosesItsOldParents() async throws {
        let a = Scope(name: "A")
        let rootA = Node(), nested = Node(), child = Node()
        nested.children = [child]
        rootA.children = [nested]
        rootA.next = child
        a.root = rootA
        await ChangeDelivery.main.drain()
        let replicaA = try Replica(of: a)
        let observer = Counter()
        watchScopes([nested, child], into: observer)

        let b = Scope(name: "B")
        b.root = nested
        await ChangeDelivery.main.drain()

        #expect(nested.parents.isEmpty)
        #expect(rootA.children.isEmpty && rootA.next == nil)
        #expect(nested.scope === b && child.scope === b && rootA.scope === a)
        #expect(b.count == 2 && b.snapshot().count == 2 && Set(b.snapshot().map(\.uuid)) == [nested.uuid, child.uuid])
        #expect(a.count == 1 && a.snapshot().count == 1)
        #expect(observer.events.filter { $0.hasPrefix("detach") }.count == 2)
        #expect(observer.events.filter { $0.hasPrefix("attach") && $0.hasSuffix(" B") }.count == 2)
        try replicaA.catchUp()
        #expect(replicaA.scope.stateJSON() == a.stateJSON())
    }

    @Test func theRootOfOneScopeMadeRootOfAnotherLeavesTheFirstEmpty() async throws {
        let (a, _, rootA, _) = await twoScopes()
        rootA.children = [Node(), Node()]
        await ChangeDelivery.main.drain()
        let c = Scope(name: "C")
        c.root = rootA
        #expect(a.root == nil && a.count == 0 && a.snapshot().isEmpty)
        #expect(c.count == 3 && c.snapshot().count == 3)
        #expect(rootA.children.allSatisfy { $0.scope === c })
    }

    @Test func linksInsideTheMovingSubtreeStay() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let first = Node(), second = Node()
        first.next = second
        second.next = first        // a cycle inside what moves
        rootA.children = [first]
        await ChangeDelivery.main.drain()
        rootB.next = first
        await ChangeDelivery.main.drain()
        #expect(first.next === second && second.next === first)
        #expect(rootA.children.isEmpty)
        #expect(first.scope === b && second.scope === b)
        #expect(a.count == 1 && b.count == 3)
    }

    @Test func movingBackAndForthKeepsBothScopesConsistent() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let node = Node()
        rootA.children = [node]
        await ChangeDelivery.main.drain()
        let replicaA = try Replica(of: a), replicaB = try Replica(of: b)
        for round in 0..<3 {
            rootB.children = [node]
            await ChangeDelivery.main.drain()
            #expect(node.scope === b && rootA.children.isEmpty, "round \(round)")
            rootA.children = [node]
            await ChangeDelivery.main.drain()
            #expect(node.scope === a && rootB.children.isEmpty, "round \(round)")
            try replicaA.catchUp()
            try replicaB.catchUp()
            #expect(replicaA.scope.stateJSON() == a.stateJSON())
            #expect(replicaB.scope.stateJSON() == b.stateJSON())
        }
        #expect(a.count == 2 && b.count == 1)
    }

    @Test func positiveControlLinkingWithinOneScopeMovesNothingOut() async throws {
        let (a, b, rootA, _) = await twoScopes()
        let node = Node()
        rootA.children = [node]
        rootA.next = node          // a second parent in the same scope is fine
        await ChangeDelivery.main.drain()
        #expect(rootA.children.first === node && rootA.next === node)
        #expect(node.scope === a && a.count == 2 && b.count == 1)
        #expect(node.parents.count == 2)
    }

    @Test func aDetachedHolderKeepsItsReference() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let node = Node(), loose = Node()
        rootA.children = [node]
        loose.next = node          // not in any scope: nothing on any wire
        await ChangeDelivery.main.drain()
        rootB.children = [node]
        #expect(loose.next === node && rootA.children.isEmpty)
        #expect(node.scope === b && a.count == 1)
    }

    @Test func aLocalReferenceFromAnotherScopeMovesNothing() async throws {
        let a = Scope(name: "A"), b = Scope(name: "B")
        let deskA = Desk(), deskB = Desk()
        let shape = Shape()
        deskA.shapes = [shape]
        a.root = deskA
        b.root = deskB
        await ChangeDelivery.main.drain()
        deskB.selection = shape    // local: app state, not scope state
        deskB.clipboard = [shape]
        #expect(shape.scope === a && deskA.shapes.first === shape && b.count == 1)
        // Positive control: the synced collection does move it.
        deskB.shapes = [shape]
        #expect(shape.scope === b && deskA.shapes.isEmpty && deskB.selection === shape)
        #expect(a.count == 1 && b.count == 2)
    }

    @Test func aRemoteFragmentNamingAnObjectThatMovedAwayMakesATwinAndLeavesTheOtherScopeAlone() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let node = Node()
        rootB.children = [node]
        await ChangeDelivery.main.drain()
        rootA.children = [node]    // moves from B to A
        await ChangeDelivery.main.drain()
        #expect(node.scope === a && rootB.children.isEmpty)
        // B's server, not yet aware, links the node's UUID again.
        try b.apply([
            SyncFragment(kind: .add, uuid: node.uuid, className: "Node", properties: ["label": "remote", "children": [], "next": nil]),
            SyncFragment(kind: .change, uuid: rootB.uuid, className: "Node", properties: ["children": [.string(node.uuid.uuidString.lowercased())]]),
        ])
        await ChangeDelivery.main.drain()
        let twin = try #require(rootB.children.first)
        #expect(twin !== node && twin.uuid == node.uuid && twin.label == "remote")
        #expect(node.scope === a && rootA.children.first === node && node.label == "")
        #expect(a.count == 2 && b.count == 2)
    }
    // MARK: - Refused: a non-optional reference holds what would move

    /// Scope A (root: a mooring whose `fixed` node is held by a non-optional reference), scope B
    /// (root: a node), replicas of both, and what B's `onLinkRefused` hears.
    private func moored() async throws -> (a: Scope, b: Scope, mooring: Mooring, rootB: Node, replicas: (Replica, Replica), refusals: Counter) {
        let a = Scope(name: "A"), b = Scope(name: "B")
        let mooring = Mooring(), rootB = Node()
        mooring.loose = [Node()]
        a.root = mooring
        b.root = rootB
        await ChangeDelivery.main.drain()
        let refusals = Counter()
        b.onLinkRefused(refusals) { refusals.events.append("\($0)") }
        return (a, b, mooring, rootB, (try Replica(of: a), try Replica(of: b)), refusals)
    }

    @Test func linkingAnObjectANonOptionalReferenceHoldsIsRefusedAndUndone() async throws {
        let (a, b, mooring, rootB, replicas, refusals) = try await moored()
        let fixed = mooring.fixed
        let observer = Counter()
        watchScopes([fixed], into: observer)
        try rootB.observeChange(observer, \.children) { _ in observer.events.append("children") }
        try rootB.observeChange(observer, \.next) { _ in observer.events.append("next") }
        var errors: [ScopeMembershipError] = []
        b.onLinkRefused(observer) { errors.append($0) }

        rootB.children.append(fixed)
        rootB.next = fixed
        await ChangeDelivery.main.drain()

        // Both sets undone: B holds nothing new, A still holds the node, nobody heard a thing.
        #expect(rootB.children.isEmpty && rootB.next == nil)
        #expect(fixed.scope === a && mooring.fixed === fixed && fixed.parents.count == 1)
        #expect(a.count == 3 && b.count == 1)
        #expect(observer.events.isEmpty)
        let expected = ScopeMembershipError.heldByNonOptionalReference(object: fixed.uuid, className: "Node", scope: "A",
                                                                       holder: mooring.uuid, property: "fixed")
        #expect(errors == [expected, expected])
        #expect(refusals.events.count == 2 && refusals.events.first?.contains("'fixed'") == true)
        // Neither scope recorded anything, so neither replica is sent a reference it lacks.
        #expect(try replicas.0.catchUp().isEmpty && (try replicas.1.catchUp().isEmpty))
        #expect(replicas.0.scope.stateJSON() == a.stateJSON() && replicas.1.scope.stateJSON() == b.stateJSON())
        // Positive control: the node the collection holds can let go, so it moves.
        let free = try #require(mooring.loose.first)
        rootB.children.append(free)
        await ChangeDelivery.main.drain()
        #expect(free.scope === b && mooring.loose.isEmpty && rootB.children.first === free)
        #expect(errors.count == 2)
        try replicas.0.catchUp()
        try replicas.1.catchUp()
        #expect(replicas.0.scope.stateJSON() == a.stateJSON() && replicas.1.scope.stateJSON() == b.stateJSON())
    }

    @Test func aLinkIsRefusedWhenAnythingThatWouldMoveWithItIsHeld() async throws {
        let (a, b, mooring, rootB, replicas, refusals) = try await moored()
        let free = try #require(mooring.loose.first)
        free.children = [mooring.fixed]   // below a node that could move, one that cannot
        await ChangeDelivery.main.drain()
        try replicas.0.catchUp()
        // Directly, and through a new subtree that is in no scope yet.
        rootB.children = [free]
        let fresh = Node()
        fresh.next = free
        rootB.children = [fresh]
        await ChangeDelivery.main.drain()
        #expect(rootB.children.isEmpty && fresh.scope == nil && b.count == 1)
        #expect(free.scope === a && mooring.loose.first === free && a.count == 3)
        #expect(refusals.events.count == 2)
        #expect(try replicas.0.catchUp().isEmpty && (try replicas.1.catchUp().isEmpty))
    }

    @Test func makingAHeldObjectTheRootOfAnotherScopeIsRefused() async throws {
        let (a, _, mooring, _, _, _) = try await moored()
        let c = Scope(name: "C")
        var errors: [ScopeMembershipError] = []
        let observer = Counter()
        c.onLinkRefused(observer) { errors.append($0) }
        c.root = mooring.fixed
        #expect(c.root == nil && c.count == 0)
        #expect(mooring.fixed.scope === a && a.count == 3)
        #expect(errors.count == 1)
        // An earlier root stays the root.
        let previous = Node()
        c.root = previous
        c.root = mooring.fixed
        #expect(c.root === previous && previous.scope === c && errors.count == 2)
        // Positive control: a node the collection holds becomes C's root.
        let free = try #require(mooring.loose.first)
        c.root = free
        #expect(c.root === free && free.scope === c && mooring.loose.isEmpty && errors.count == 2)
    }

    @Test func anUndoThatWouldMoveAHeldObjectBackIsRefusedForThatProperty() async throws {
        let (a, b, mooring, rootB, _, refusals) = try await moored()
        let node = Node()
        rootB.children = [node]
        rootB.label = "before"
        await ChangeDelivery.main.drain()
        // The node moves to A, where a non-optional reference holds it; B records its collection's loss.
        mooring.fixed = node
        await ChangeDelivery.main.drain()
        #expect(node.scope === a && rootB.children.isEmpty)
        rootB.label = "after"
        b.undo()   // the label: nothing to refuse
        #expect(rootB.label == "before" && refusals.events.isEmpty)
        b.undo()   // the collection's loss: undoing it would take the node out of A again
        await ChangeDelivery.main.drain()
        #expect(rootB.children.isEmpty && node.scope === a && mooring.fixed === node)
        #expect(refusals.events.count == 1)
        #expect(a.count == 3 && b.count == 1)
    }
}
