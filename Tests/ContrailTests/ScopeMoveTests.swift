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
        await NotificationQueue.main.drain()
        return (a, b, rootA, rootB)
    }

    @Test func linkingAMemberOfAnotherScopeMovesItWithItsSubtree() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let moved = Node(), below = Node(), stays = Node()
        moved.children = [below]
        rootA.children = [moved, stays]
        rootA.next = below          // a second reference in A to something that moves
        await NotificationQueue.main.drain()
        let replicaA = try Replica(of: a), replicaB = try Replica(of: b)
        #expect(a.count == 4 && b.count == 1)
        let observer = Counter()
        watchScopes([moved, below, stays], into: observer)

        rootB.children.append(moved)
        await NotificationQueue.main.drain()

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
        await NotificationQueue.main.drain()
        let replicaA = try Replica(of: a)
        let observer = Counter()
        watchScopes([nested, child], into: observer)

        let b = Scope(name: "B")
        b.root = nested
        await NotificationQueue.main.drain()

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
        await NotificationQueue.main.drain()
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
        await NotificationQueue.main.drain()
        rootB.next = first
        await NotificationQueue.main.drain()
        #expect(first.next === second && second.next === first)
        #expect(rootA.children.isEmpty)
        #expect(first.scope === b && second.scope === b)
        #expect(a.count == 1 && b.count == 3)
    }

    @Test func movingBackAndForthKeepsBothScopesConsistent() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let node = Node()
        rootA.children = [node]
        await NotificationQueue.main.drain()
        let replicaA = try Replica(of: a), replicaB = try Replica(of: b)
        for round in 0..<3 {
            rootB.children = [node]
            await NotificationQueue.main.drain()
            #expect(node.scope === b && rootA.children.isEmpty, "round \(round)")
            rootA.children = [node]
            await NotificationQueue.main.drain()
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
        await NotificationQueue.main.drain()
        #expect(rootA.children.first === node && rootA.next === node)
        #expect(node.scope === a && a.count == 2 && b.count == 1)
        #expect(node.parents.count == 2)
    }

    @Test func aDetachedHolderKeepsItsReference() async throws {
        let (a, b, rootA, rootB) = await twoScopes()
        let node = Node(), loose = Node()
        rootA.children = [node]
        loose.next = node          // not in any scope: nothing on any wire
        await NotificationQueue.main.drain()
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
        await NotificationQueue.main.drain()
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
        await NotificationQueue.main.drain()
        rootA.children = [node]    // moves from B to A
        await NotificationQueue.main.drain()
        #expect(node.scope === a && rootB.children.isEmpty)
        // B's server, not yet aware, links the node's UUID again.
        try b.apply([
            SyncFragment(kind: .add, uuid: node.uuid, className: "Node", properties: ["label": "remote", "children": [], "next": nil]),
            SyncFragment(kind: .change, uuid: rootB.uuid, className: "Node", properties: ["children": [.string(node.uuid.uuidString.lowercased())]]),
        ])
        await NotificationQueue.main.drain()
        let twin = try #require(rootB.children.first)
        #expect(twin !== node && twin.uuid == node.uuid && twin.label == "remote")
        #expect(node.scope === a && rootA.children.first === node && node.label == "")
        #expect(a.count == 2 && b.count == 2)
    }
}
