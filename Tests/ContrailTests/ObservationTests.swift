import Contrail
import Testing

@MainActor
@Suite struct ObservationTests {
    @Test func queuedObserverFiresOncePerTurnImmediateOncePerChange() async throws {
        let shape = Shape()
        let counter = Counter()
        var immediate = 0
        try shape.observeChange(counter, \.x, \.y) { counter.count += 1 }
        shape.observeChangeImmediately(counter) { immediate += 1 }
        shape.x = 10
        shape.y = 20
        #expect(immediate == 2)
        #expect(counter.count == 0)
        await ChangeDelivery.main.drain()
        #expect(counter.count == 1)
    }

    @Test func setOfSameValueNotifiesNobody() async throws {
        let shape = Shape()
        let counter = Counter()
        shape.observeChangeImmediately(counter) { counter.count += 1 }
        shape.x = 0
        #expect(counter.count == 0)
    }

    @Test func singleKeyPathOnlyFiresForThatProperty() async throws {
        let shape = Shape()
        let counter = Counter()
        try shape.observeChangeImmediately(counter, \.x) { counter.count += 1 }
        shape.y = 5
        #expect(counter.count == 0)
        shape.x = 5
        #expect(counter.count == 1)
    }

    @Test func cancellingStopsDelivery() async throws {
        let shape = Shape()
        let counter = Counter()
        let token = shape.observeChangeImmediately(counter) { counter.count += 1 }
        shape.x = 1
        token.cancel()
        shape.x = 2
        #expect(counter.count == 1)
        #expect(token.isCancelled)
    }

    @Test func releasingTheObserverStopsDelivery() async throws {
        let shape = Shape()
        var fired = 0
        var observer: Counter? = Counter()
        shape.observeChangeImmediately(observer!) { fired += 1 }
        shape.x = 1
        observer = nil
        shape.x = 2
        #expect(fired == 1)
    }

    @Test func removeObserversRemovesAllOfOneObserver() async throws {
        let shape = Shape()
        let a = Counter(), b = Counter()
        try shape.observeChangeImmediately(a, \.x) { a.count += 1 }
        try shape.observeChangeImmediately(a, \.y) { a.count += 1 }
        shape.observeChangeImmediately(b) { b.count += 1 }
        shape.removeObservers(a)
        shape.x = 1
        shape.y = 1
        #expect(a.count == 0)
        #expect(b.count == 2)
    }

    @Test func compositePropertyFiresWhenDependencyChanges() async throws {
        let shape = Shape()
        let counter = Counter()
        try shape.observeChangeImmediately(counter, \.area) { counter.count += 1 }
        shape.width = 3
        shape.height = 4
        shape.x = 9
        #expect(counter.count == 2)
        #expect(shape.area == 12)
    }

    @Test func collectionAddAndRemoveReportIndices() async throws {
        let canvas = Canvas()
        let counter = Counter()
        let a = Shape(), b = Shape(), c = Shape()
        try canvas.observeCollectionAdd(counter, \.shapes) { shape, index in
            counter.events.append("add \(shape === a ? "a" : shape === b ? "b" : "c")@\(index)")
        }
        try canvas.observeCollectionRemove(counter, \.shapes) { shape, index in
            counter.events.append("remove \(shape === a ? "a" : shape === b ? "b" : "c")@\(index)")
        }
        canvas.shapes = [a, c]
        canvas.shapes.insert(b, at: 1)
        canvas.shapes.remove(at: 2)
        #expect(counter.events == ["add a@0", "add c@1", "add b@1", "remove c@2"])
    }

    @Test func treeChangeFiresForDescendants() async throws {
        let canvas = Canvas()
        let shape = Shape()
        canvas.shapes = [shape]
        let counter = Counter()
        canvas.observeTreeChange(counter) { counter.count += 1 }
        shape.x = 1
        shape.y = 2
        await ChangeDelivery.main.drain()
        #expect(counter.count == 1)
    }

    @Test func parentObservers() async throws {
        let canvas = Canvas()
        let shape = Shape()
        let counter = Counter()
        shape.observeAddedToParent(counter) { parent, key in counter.events.append("added \(key) \(parent === canvas)") }
        shape.observeRemovedFromParent(counter) { parent, key in counter.events.append("removed \(key)") }
        canvas.shapes = [shape]
        canvas.highlighted = shape
        #expect(shape.parents.count == 2)
        canvas.shapes = []
        #expect(counter.events == ["added shapes true", "added highlighted true", "removed shapes"])
    }

    @Test func valuesSequenceYieldsOncePerTurn() async throws {
        let shape = Shape()
        let stream = try shape.values(of: \.x)
        shape.x = 1
        shape.x = 2
        await ChangeDelivery.main.drain()
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == 0)   // the value when the sequence was made
        #expect(await iterator.next() == 2)
    }
}
