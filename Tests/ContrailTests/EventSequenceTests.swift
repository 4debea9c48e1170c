import Contrail
import Testing

/// Every event a callback reports also comes as an `AsyncSequence` with a stated buffering policy
/// that ends when its source is freed; every callback registration returns a token.
@MainActor
@Suite struct EventSequenceTests {
    @Test func valuesStartWithTheCurrentValueAndFollowEachTurn() async throws {
        let shape = Shape()
        shape.x = 5
        await ChangeDelivery.main.drain()
        var iterator = try shape.values(of: \.x).makeAsyncIterator()
        #expect(await iterator.next() == 5)
        shape.x = 6
        shape.x = 7
        await ChangeDelivery.main.drain()
        #expect(await iterator.next() == 7)
    }

    @Test func valuesEndWhenTheModelIsFreed() async throws {
        var shape: Shape? = Shape()
        weak let weakShape = shape
        let stream = try #require(shape).values(of: \.x)
        shape = nil
        #expect(weakShape == nil)
        var seen: [Double] = []
        for await value in stream { seen.append(value) }   // ends: would hang otherwise
        #expect(seen == [0])
    }

    @Test func valuesKeepTheNewest64Unread() async throws {
        let shape = Shape()
        let stream = try shape.values(of: \.x)
        for turn in 1...100 {
            shape.x = Double(turn)
            await ChangeDelivery.main.drain()
        }
        var seen: [Double] = []
        for await value in stream {
            seen.append(value)
            if value == 100 { break }
        }
        #expect(seen.count == 64)
        #expect(seen.first == 37 && seen.last == 100)
    }

    @Test func changeSetsAreBufferedWithoutLoss() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        let stream = scope.changeSets()
        for turn in 1...100 { scope.modify { canvas.name = "\(turn)" } }
        var count = 0
        for await changeSet in stream {
            count += 1
            if changeSet === scope.history.last { break }
        }
        #expect(count == 100)
    }

    @Test func changeSetsEndWhenTheScopeIsFreed() async throws {
        var scope: Scope? = Scope(name: "s")
        let canvas = Canvas()
        scope?.root = canvas
        let stream = try #require(scope).changeSets()
        scope?.modify { canvas.name = "a" }
        weak let weakScope = scope
        scope = nil
        #expect(weakScope == nil)
        var count = 0
        for await _ in stream { count += 1 }   // ends: would hang otherwise
        #expect(count == 1)
    }

    @Test func stateChangeRegistrationTakesAnObserverAndReturnsAToken() async throws {
        let scope = Scope(name: "s")
        let canvas = Canvas()
        scope.root = canvas
        scope.isSynced = true
        let first = try #require(scope.modify { canvas.name = "a" })
        let second = try #require(scope.modify { canvas.name = "b" })
        let observer = Counter()
        var cancelledSeen: [ChangeSet.State] = []
        var keptSeen: [ChangeSet.State] = []
        first.onStateChange(observer) { cancelledSeen.append($0) }.cancel()
        first.onStateChange(observer) { keptSeen.append($0) }
        var gone: Counter? = Counter()
        var goneSeen: [ChangeSet.State] = []
        second.onStateChange(try #require(gone)) { goneSeen.append($0) }
        gone = nil
        first.settle(.completed)
        second.settle(.completed)
        #expect(keptSeen == [.completed])   // the positive control
        #expect(cancelledSeen.isEmpty)
        #expect(goneSeen.isEmpty)
    }
}
