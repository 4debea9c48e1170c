import Contrail
import Testing

/// Something a callback captures, to see when the callback is released.
final class Payload {}

/// The view of the README's quick start: observes each shape added to a canvas.
@MainActor
final class CanvasView {
    var frames: [Double] = []

    /// The README's pattern: the callback receives the shape, so the closure does not capture it.
    func watch(_ canvas: Canvas) throws {
        try canvas.observeCollectionAdd(self, \.shapes) { [unowned self] shape, _ in
            _ = try? shape.observeChange(self, \.x, \.y) { [unowned self] shape in frames.append(shape.x) }
        }
    }

    /// The old pattern: the closure captures the shape it observes, in that shape's own observer list.
    func watchCapturing(_ canvas: Canvas) throws {
        try canvas.observeCollectionAdd(self, \.shapes) { [unowned self] shape, _ in
            _ = try? shape.observeChange(self, \.x) { [unowned self] in frames.append(shape.x) }
        }
    }
}

@MainActor
@Suite struct ObservationLifetimeTests {
    /// Adds a shape to an observed canvas in a scope, moves it, removes it, and returns a weak
    /// reference to it once nothing but the model and its observers could hold it.
    private func removedShape(capturing: Bool, view: CanvasView) async throws -> (weak: WeakBox<Shape>, canvas: Canvas, scope: Scope) {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas")
        // Undo history holds the objects its change sets touched (to undo the removal); keep none.
        scope.historyLimit = 0
        scope.root = canvas
        if capturing { try view.watchCapturing(canvas) } else { try view.watch(canvas) }
        let box = WeakBox<Shape>()
        do {
            let shape = Shape()
            box.object = shape
            canvas.shapes.append(shape)
            await ChangeDelivery.main.drain()
            shape.x = 42
            await ChangeDelivery.main.drain()
            canvas.shapes.removeAll()
            await ChangeDelivery.main.drain()
        }
        return (box, canvas, scope)
    }

    @Test func anObservedShapeRemovedFromItsCanvasIsFreed() async throws {
        let view = CanvasView()
        let (box, canvas, scope) = try await removedShape(capturing: false, view: view)
        #expect(view.frames == [42])
        #expect(box.object == nil)
        #expect(canvas.shapes.isEmpty && scope.count == 1)
    }

    @Test func positiveControlAClosureCapturingItsSubjectKeepsItAlive() async throws {
        let view = CanvasView()
        let (box, _, _) = try await removedShape(capturing: true, view: view)
        #expect(view.frames == [42])
        // The leak the subject-receiving callback avoids: the shape's own entry holds the shape.
        #expect(box.object != nil)
        box.object?.removeObservers(view)
        #expect(box.object == nil)
    }

    @Test func aDeadObserversClosureIsReleasedAtTheSubjectsNextChange() async throws {
        let shape = Shape()
        let payload = WeakBox<Payload>()
        var observer: Counter? = Counter()
        do {
            let captured = Payload()
            payload.object = captured
            try shape.observeChange(observer!, \.x) { _ in _ = captured }
            shape.observeChangeImmediately(observer!) { _ in _ = captured }
        }
        shape.x = 1
        await ChangeDelivery.main.drain()
        #expect(payload.object != nil)
        observer = nil
        shape.x = 2
        await ChangeDelivery.main.drain()
        #expect(payload.object == nil)
    }

    @Test func aCancelledObservationReleasesItsClosureAtOnce() async throws {
        let shape = Shape()
        let observer = Counter()
        let payload = WeakBox<Payload>()
        let token: ObservationToken
        do {
            let captured = Payload()
            payload.object = captured
            token = try shape.observeChange(observer, \.x) { _ in _ = captured }
        }
        #expect(payload.object != nil)
        token.cancel()
        #expect(payload.object == nil)
    }

    @Test func callbacksReceiveTheObservedObject() async throws {
        let canvas = Canvas()
        let shape = Shape()
        canvas.shapes = [shape]
        let observer = Counter()
        var received: [ModelObject] = []
        try shape.observeChangeImmediately(observer, \.x) { received.append($0) }
        try shape.observeChange(observer, \.x) { received.append($0) }
        canvas.observeTreeChange(observer) { received.append($0) }
        shape.x = 3
        await ChangeDelivery.main.drain()
        #expect(received.count == 3)
        #expect(received[0] === shape && received[1] === shape && received[2] === canvas)
    }

    // MARK: - Misuse

    @Test func observingAKeyPathThatIsNotAPropertyIsATypedError() throws {
        let shape = Shape()
        let observer = Counter()
        #expect(throws: ObservationError.self) { try shape.observeChange(observer, \.uuid) { _ in } }
        #expect(throws: ObservationError.self) { try shape.observeChangeImmediately(observer, \.plain) { _ in } }
        #expect(throws: ObservationError.self) { try shape.values(of: \.className) }
        let canvas = Canvas()
        #expect(throws: ObservationError.self) { try canvas.observeCollectionAdd(observer, \.scratch) { _, _ in } }
        // Positive control: the same calls on @Property and composite key paths work.
        try shape.observeChangeImmediately(observer, \.x, \.area) { _ in observer.count += 1 }
        try canvas.observeCollectionAdd(observer, \.shapes) { _, _ in observer.count += 1 }
        shape.x = 1
        shape.width = 5
        canvas.shapes.append(shape)
        #expect(observer.count == 3)
    }

    // MARK: - Tree changes

    @Test func treeObserversFireOncePerTurnForAnyNumberOfSetsBelow() async throws {
        let root = Node()
        let middle = Node()
        let leaves = (0..<5).map { _ in Node() }
        root.children = [middle]
        middle.children = leaves
        let observer = Counter()
        var rootFired = 0
        var middleFired = 0
        root.observeTreeChange(observer) { _ in rootFired += 1 }
        middle.observeTreeChange(observer) { _ in middleFired += 1 }
        for turn in 1...3 {
            for leaf in leaves { leaf.label = "turn \(turn)" }
            await ChangeDelivery.main.drain()
            #expect(rootFired == turn && middleFired == turn)
        }
    }

    @Test func aTreeObserverRegisteredAfterASetInTheSameTurnStillFires() async throws {
        let root = Node()
        let leaf = Node()
        root.children = [leaf]
        leaf.label = "first"   // visits leaf and root in this turn
        let observer = Counter()
        root.observeTreeChange(observer) { _ in observer.count += 1 }
        leaf.label = "second"
        await ChangeDelivery.main.drain()
        #expect(observer.count == 1)
    }

    @Test func aNodeWithTwoParentsNotifiesBoth() async throws {
        let left = Node()
        let right = Node()
        let shared = Node()
        left.children = [shared]
        right.next = shared
        await ChangeDelivery.main.drain()
        let observer = Counter()
        left.observeTreeChange(observer) { _ in observer.events.append("left") }
        right.observeTreeChange(observer) { _ in observer.events.append("right") }
        shared.label = "a"
        shared.label = "b"
        await ChangeDelivery.main.drain()
        #expect(observer.events.sorted() == ["left", "right"])
    }
}

/// Holds an object weakly.
final class WeakBox<Object: AnyObject> {
    weak var object: Object?
}
