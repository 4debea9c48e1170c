@testable import Contrail
@testable import ContrailWire
import Testing

/// An observer's callbacks, and what they captured, are released at the end of the first delivery
/// turn after the observer is gone: not at the observed object's next change.
@MainActor
@Suite struct ObserverReleaseTests {
    /// Registers through `register` for an observer that lives only inside this call, with a
    /// closure capturing a sentinel; returns the sentinel and the observer weakly.
    private func registerForShortLivedObserver(_ register: (AnyObject, Payload) throws -> Void) rethrows -> (sentinel: WeakBox<Payload>, observer: WeakBox<Counter>) {
        let sentinel = WeakBox<Payload>()
        let observer = WeakBox<Counter>()
        do {
            let captured = Payload()
            let counter = Counter()
            sentinel.object = captured
            observer.object = counter
            try register(counter, captured)
        }
        return (sentinel, observer)
    }

    @Test func aDeadObserversModelCallbacksAreReleasedAfterOneTurnWithoutAnyChange() async throws {
        let shape = Shape()
        let canvas = Canvas()
        canvas.shapes = [shape]
        // Positive control: a live observer keeps its closures through any number of turns.
        let keeper = Counter()
        let kept = WeakBox<Payload>()
        do {
            let captured = Payload()
            kept.object = captured
            try shape.observeChange(keeper, \.x) { _ in _ = captured }
        }
        let (sentinel, observer) = try registerForShortLivedObserver { observer, captured in
            try shape.observeChange(observer, \.x) { _ in _ = captured }
            shape.observeChangeImmediately(observer) { _ in _ = captured }
            canvas.observeTreeChange(observer) { _ in _ = captured }
            try canvas.observeCollectionAdd(observer, \.shapes) { _, _ in _ = captured }
            shape.observeDetach(observer) { _ in _ = captured }
            shape.observeAddedToParent(observer) { _, _ in _ = captured }
        }
        #expect(observer.object == nil)
        // Nothing released yet: no turn has ended since the observer died.
        #expect(sentinel.object != nil)
        await ChangeDelivery.main.drain()
        #expect(sentinel.object == nil)
        #expect(kept.object != nil)
    }

    @Test func anObserverThatDiesInACallbackIsReleasedAtTheEndOfThatTurn() async throws {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas")
        scope.historyLimit = 0
        scope.root = canvas
        let shape = Shape()
        canvas.shapes = [shape]
        await ChangeDelivery.main.drain()
        // A row view per shape, dropped when its shape is removed (as a list view does).
        var rows: [Counter] = [Counter()]
        let sentinel = WeakBox<Payload>()
        do {
            let captured = Payload()
            sentinel.object = captured
            try shape.observeChange(rows[0], \.x) { _ in _ = captured }
        }
        let owner = Counter()
        try canvas.observeCollectionRemove(owner, \.shapes) { _, index in rows.remove(at: index) }
        canvas.shapes.removeAll()
        #expect(rows.isEmpty)
        // One run-loop turn: the scope's flush is queued, so the queue delivers once by itself.
        await ChangeDelivery.main.nextDelivery()
        #expect(sentinel.object == nil)
    }

    @Test func cancelReleasesAtOnceAndTheTokenReportsIt() async throws {
        let shape = Shape()
        let observer = Counter()
        let sentinel = WeakBox<Payload>()
        let token: ObservationToken
        do {
            let captured = Payload()
            sentinel.object = captured
            token = try shape.observeChange(observer, \.x) { _ in _ = captured }
        }
        shape.x = 1   // queued: the queue holds the entry until the turn
        #expect(!token.isCancelled)
        token.cancel()
        #expect(token.isCancelled && sentinel.object == nil)
        await ChangeDelivery.main.drain()
        #expect(observer.count == 0)
    }

    @Test func scopeListenersOfADeadObserverAreReleasedAfterOneTurn() async throws {
        let scope = Scope(name: "Canvas")
        scope.root = Canvas()
        let keeper = Counter()
        scope.onChanges(keeper) { _ in keeper.count += 1 }
        let (sentinel, observer) = registerForShortLivedObserver { observer, captured in
            scope.onChanges(observer) { _ in _ = captured }
        }
        #expect(observer.object == nil && sentinel.object != nil)
        await ChangeDelivery.main.drain()
        #expect(sentinel.object == nil)
        // Positive control: the live listener still hears changes.
        (scope.root as? Canvas)?.name = "renamed"
        await ChangeDelivery.main.drain()
        #expect(keeper.count == 1)
    }

    @Test func clientStatusObserversOfADeadObserverAreReleasedAfterOneTurn() async throws {
        let client = Client(url: "ws://127.0.0.1:9/never-connected")
        let (sentinel, observer) = registerForShortLivedObserver { observer, captured in
            client.onStatusChange(observer) { _ in _ = captured }
        }
        #expect(observer.object == nil && sentinel.object != nil)
        await ChangeDelivery.main.drain()
        #expect(sentinel.object == nil)
    }

    @Test func sessionSyncStatusObserversOfADeadObserverAreReleasedAfterOneTurn() async throws {
        let client = Client(url: "ws://127.0.0.1:9/never-connected")
        let session = Session(client: client, token: "test")
        let kept = WeakBox<Payload>()
        let keeper = Counter()
        do {
            let captured = Payload()
            kept.object = captured
            session.onSyncStatus(keeper) { _ in _ = captured }
        }
        let (sentinel, observer) = registerForShortLivedObserver { observer, captured in
            session.onSyncStatus(observer) { _ in _ = captured }
        }
        #expect(observer.object == nil && sentinel.object != nil)
        await ChangeDelivery.main.drain()
        #expect(sentinel.object == nil)
        #expect(kept.object != nil)
    }

    @Test func anAddressReusedByANewObserverReleasesTheOldOnesCallbacks() async throws {
        let shape = Shape()
        var sentinels: [WeakBox<Payload>] = []
        // Many short-lived observers: the allocator reuses addresses; registering for a new object at
        // a dead one's address releases the dead one's callbacks, and nothing is released wrongly.
        var live: [Counter] = []
        for _ in 0..<50 {
            let (sentinel, _) = try registerForShortLivedObserver { observer, captured in
                try shape.observeChange(observer, \.x) { _ in _ = captured }
            }
            sentinels.append(sentinel)
            let survivor = Counter()
            live.append(survivor)
            try shape.observeChangeImmediately(survivor, \.x) { _ in survivor.count += 1 }
        }
        await ChangeDelivery.main.drain()
        #expect(sentinels.allSatisfy { $0.object == nil })
        shape.x = 5
        #expect(live.allSatisfy { $0.count == 1 })
    }

    @Test func theSweepChecksAtMostItsBudgetPerTurn() throws {
        // One shape per observer: removing an entry from a shape also drops that shape's other dead entries.
        let shapes = (0..<10).map { _ in Shape() }
        var sentinels: [WeakBox<Payload>] = []
        // All ten observers alive while registering (no address is reused), then all dropped.
        var observers: [Counter] = []
        for shape in shapes {
            let observer = Counter()
            let captured = Payload()
            let sentinel = WeakBox<Payload>()
            sentinel.object = captured
            sentinels.append(sentinel)
            observers.append(observer)
            shape.observeChange(observer) { _ in _ = captured }
        }
        observers.removeAll()
        let sweep = ChangeDelivery.main.sweep
        #expect(sweep.sweep(budget: 4) <= 4)
        // Each sentinel belongs to one observer: at most four were released.
        #expect(sentinels.filter { $0.object != nil }.count >= 6)
        var rounds = 0
        while sentinels.contains(where: { $0.object != nil }) && rounds < 1000 {
            sweep.sweep(budget: 4)
            rounds += 1
        }
        #expect(sentinels.allSatisfy { $0.object == nil })
    }
}
