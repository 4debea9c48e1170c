import Contrail
import Foundation
import ContrailTestSupport
import Testing

/// A model whose `drag` is recorded at most every 50 ms.
final class Draggable: ModelObject {
    @Property var name = ""
    @Property(minSyncInterval: 0.05) var drag: Double = 0
}

/// Holds a `Draggable`.
final class DragBoard: ModelObject {
    @Property var item: Draggable?
}

@MainActor
@Suite struct ObservationEdgeTests {
    @Test func anImmediateObserverCancelledInItsOwnCallbackFiresOnce() throws {
        let shape = Shape()
        let counter = Counter()
        var token: ObservationToken?
        token = try shape.observeChangeImmediately(counter, \.x) {
            counter.count += 1
            token?.cancel()
        }
        shape.x = 1
        shape.x = 2
        #expect(counter.count == 1)
        #expect(token?.isCancelled == true)
    }

    @Test func aQueuedObserverCancelledInItsOwnCallbackFiresOnce() async throws {
        let shape = Shape()
        let counter = Counter()
        let other = Counter()
        var token: ObservationToken?
        token = try shape.observeChange(counter, \.x) {
            counter.count += 1
            token?.cancel()
        }
        try shape.observeChange(other, \.x) { other.count += 1 }
        shape.x = 1
        await ChangeDelivery.main.drain()
        shape.x = 2
        await ChangeDelivery.main.drain()
        #expect(counter.count == 1)
        #expect(other.count == 2)   // cancelling one observation leaves the others alone
    }

    @Test func aQueuedCallbackThatMutatesTheModelIsNotifiedInTheNextDelivery() throws {
        let shape = Shape()
        let counter = Counter()
        var seen: [Double] = []
        try shape.observeChange(counter, \.x) {
            seen.append(shape.x)
            if shape.x == 1 { shape.x = 2 }
        }
        shape.x = 1
        ChangeDelivery.main.deliverPending()
        #expect(seen == [1])                         // not re-entered during its own delivery
        #expect(ChangeDelivery.main.hasPending)
        ChangeDelivery.main.deliverPending()
        #expect(seen == [1, 2])
        ChangeDelivery.main.deliverPending()
        #expect(seen == [1, 2])
    }

    @Test func aTreeChangeTwoLevelsDownReachesTheRootOncePerTurn() async throws {
        let root = Node()
        let middle = Node()
        let leaf = Node()
        root.children = [middle]
        middle.children = [leaf]
        await ChangeDelivery.main.drain()
        let rootCounter = Counter()
        let middleCounter = Counter()
        let leafCounter = Counter()
        root.observeTreeChange(rootCounter) { rootCounter.count += 1 }
        middle.observeTreeChange(middleCounter) { middleCounter.count += 1 }
        leaf.observeTreeChange(leafCounter) { leafCounter.count += 1 }

        leaf.label = "a"
        leaf.label = "b"
        middle.label = "m"
        await ChangeDelivery.main.drain()
        #expect(rootCounter.count == 1 && middleCounter.count == 1 && leafCounter.count == 1)

        middle.label = "changed"
        await ChangeDelivery.main.drain()
        #expect(rootCounter.count == 2 && middleCounter.count == 2 && leafCounter.count == 1)

        // Once taken out, the leaf's changes no longer reach its former ancestors.
        middle.children = []
        await ChangeDelivery.main.drain()
        #expect(rootCounter.count == 3 && middleCounter.count == 3)
        leaf.label = "alone"
        await ChangeDelivery.main.drain()
        #expect(rootCounter.count == 3 && middleCounter.count == 3 && leafCounter.count == 2)
    }

    @Test func attachingAndDetachingADeepSubtreeFiresOncePerObject() throws {
        let scope = Scope(name: "deep")
        let root = Node()
        scope.root = root
        // top → a → (b, c), b and c both hold d (a diamond), d → top (a cycle), depth 4.
        let top = Node(), a = Node(), b = Node(), c = Node(), d = Node()
        top.children = [a]
        a.children = [b, c]
        b.next = d
        c.children = [d]
        d.next = top
        let subtree = [top, a, b, c, d]
        let counter = Counter()
        var attached: [ObjectIdentifier: Int] = [:]
        var detached: [ObjectIdentifier: Int] = [:]
        for node in subtree {
            node.observeAttach(counter) { attachedScope in
                #expect(attachedScope === scope)
                attached[ObjectIdentifier(node), default: 0] += 1
            }
            node.observeDetach(counter) { _ in detached[ObjectIdentifier(node), default: 0] += 1 }
        }

        root.children.append(top)
        #expect(subtree.allSatisfy { $0.scope === scope })
        #expect(scope.count == 6)
        #expect(attached.count == 5 && attached.values.allSatisfy { $0 == 1 })
        #expect(detached.isEmpty)

        root.children.removeAll()
        #expect(subtree.allSatisfy { $0.scope == nil })
        #expect(scope.count == 1)
        #expect(detached.count == 5 && detached.values.allSatisfy { $0 == 1 })
        #expect(attached.values.allSatisfy { $0 == 1 })
    }

    @Test(arguments: [
        [2, 0, 1], [1, 0, 2], [2, 1, 0], [0, 2, 1], [3, 2, 1, 0], [1, 2, 3, 0], [0, 1, 2, 3],
    ])
    func reorderingACollectionGivesRemoveAddPairsWithCorrectIndices(order: [Int]) throws {
        let canvas = Canvas()
        let shapes = order.indices.map { _ in Shape() }
        canvas.shapes = shapes
        let counter = Counter()
        var removed: [(Shape, Int)] = []
        var added: [(Shape, Int)] = []
        try canvas.observeCollectionRemove(counter, \.shapes) { removed.append(($0, $1)) }
        try canvas.observeCollectionAdd(counter, \.shapes) { added.append(($0, $1)) }

        let reordered = order.map { shapes[$0] }
        canvas.shapes = reordered

        // Every removed element comes back: a reorder is remove/add pairs, never a net change.
        #expect(removed.count == added.count)
        #expect(Set(removed.map { ObjectIdentifier($0.0) }) == Set(added.map { ObjectIdentifier($0.0) }))
        if order == Array(order.indices) { #expect(removed.isEmpty) } else { #expect(!removed.isEmpty) }
        // Removal indices are indices in the old contents, insertion indices in the new contents,
        // so replaying them (all removals, then insertions in ascending order) gives the new contents.
        for (shape, index) in removed { #expect(shapes[index] === shape) }
        for (shape, index) in added { #expect(reordered[index] === shape) }
        let removedIndices = Set(removed.map(\.1))
        #expect(removedIndices.count == removed.count)
        var replay = shapes.enumerated().filter { !removedIndices.contains($0.offset) }.map(\.element)
        for (shape, index) in added.sorted(by: { $0.1 < $1.1 }) { replay.insert(shape, at: index) }
        #expect(replay.map(ObjectIdentifier.init) == reordered.map(ObjectIdentifier.init))
        // Each shape is still under the canvas exactly once.
        #expect(shapes.allSatisfy { $0.parents.count == 1 && $0.parents[0].parent === canvas })
    }

    @Test func settingAnEqualValueNotifiesNobodyAndRecordsNothing() async throws {
        let scope = Scope(name: "equal")
        let canvas = Canvas()
        scope.root = canvas
        let shape = Shape()
        canvas.shapes = [shape]
        canvas.highlighted = shape
        canvas.name = "same"
        shape.x = 5
        scope.flush()
        await ChangeDelivery.main.drain()

        let counter = Counter()
        shape.observeChangeImmediately(counter) { counter.events.append("immediate") }
        shape.observeChange(counter) { counter.events.append("queued") }
        canvas.observeTreeChange(counter) { counter.events.append("tree") }
        canvas.observeChangeImmediately(counter) { counter.events.append("canvas") }
        try canvas.observeCollectionAdd(counter, \.shapes) { _, _ in counter.events.append("add") }
        try canvas.observeCollectionRemove(counter, \.shapes) { _, _ in counter.events.append("remove") }
        shape.observeAddedToParent(counter) { _, _ in counter.events.append("parent") }

        shape.x = 5
        shape.color = .red
        shape.kind = .rectangle
        canvas.name = "same"
        canvas.shapes = [shape]
        canvas.highlighted = shape
        await ChangeDelivery.main.drain()
        #expect(counter.events.isEmpty)
        #expect(scope.flush() == nil)

        shape.x = 6
        await ChangeDelivery.main.drain()
        #expect(counter.events == ["immediate", "queued", "tree"])
    }

    @Test func minimumSyncIntervalThrottlesRecordingButTheFinalValueGoesOutLater() async throws {
        let clock = TestClock()
        let scope = Scope(name: "throttle", clock: clock)
        let root = DragBoard()
        scope.root = root
        let model = Draggable()
        root.item = model
        let joined = try #require(scope.flush())
        #expect(joined.fragments.contains { $0.kind == .add && $0.uuid == model.uuid })

        model.drag = 1
        let first = try #require(scope.flush())
        #expect(first.fragments.first?.properties == ["drag": .double(1)])

        // Within the interval: observers see every value, but nothing is recorded yet.
        let counter = Counter()
        try model.observeChangeImmediately(counter, \.drag) { counter.count += 1 }
        model.drag = 2
        model.drag = 3
        model.name = "unthrottled"
        #expect(counter.count == 2)
        let meanwhile = try #require(scope.flush())
        #expect(meanwhile.fragments.first?.properties == ["name": .string("unthrottled")])

        // Not a moment before the interval is over (virtual time: 1 ms short of 50 ms)…
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .milliseconds(49))
        await ChangeDelivery.main.drain()
        #expect(scope.flush() == nil)
        // …and then the last value goes out on its own, in a later change set.
        clock.advance(by: .milliseconds(1))
        let later = await firstChangeSet(of: scope, within: .seconds(60)) { changeSet in
            changeSet.fragments.contains { $0.uuid == model.uuid && $0.properties["drag"] != nil }
        }
        let fragment = try #require(later?.fragments.first { $0.uuid == model.uuid })
        #expect(fragment.properties == ["drag": .double(3)])
        #expect(scope.flush() == nil)
    }

    /// The first change set of `scope` that satisfies `matches`, or nil after `timeout`.
    func firstChangeSet(of scope: Scope, within timeout: Duration,
                        where matches: @escaping @MainActor (ChangeSet) -> Bool) async -> ChangeSet? {
        let waiter = ChangeSetWaiter()
        return await withCheckedContinuation { continuation in
            waiter.continuation = continuation
            scope.onChanges(waiter) { changeSet in
                if matches(changeSet) { waiter.finish(changeSet) }
            }
            waiter.timeout = Task { @MainActor in
                try? await Task.sleep(for: timeout)
                waiter.finish(nil)
            }
        }
    }
}

/// Resumes one waiting task once: with a change set, or with nil on timeout.
@MainActor
final class ChangeSetWaiter {
    var continuation: CheckedContinuation<ChangeSet?, Never>?
    var timeout: Task<Void, Never>?

    func finish(_ changeSet: ChangeSet?) {
        timeout?.cancel()
        continuation?.resume(returning: changeSet)
        continuation = nil
    }
}
