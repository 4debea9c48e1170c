import Contrail
import ContrailBenchModels
import Foundation
import ContrailSupport
import Observation

/// `contrail bench model`: a property set as an app writes it, and the memory of a model object,
/// each against the Observation module (`@Observable`) or a plain class in the same run.
///
/// Every set goes through an ordinary method the optimizer may not inline (`Mover`), with a value
/// it cannot fold, so neither side's setter is reduced to a bare store: this is the call shape of
/// an event handler that moves a shape. The models live in this module, as an app's models live in
/// the app; `model.set.cross_module` sets models declared in a library (`ContrailBenchModels`).
@MainActor
enum ModelBench {
    /// A benchmark whose own sanity check failed (an observer fired the wrong number of times).
    struct CheckFailed: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        // Memory first: the heap has not yet been grown (and freed) by the timing runs, whose freed
        // chunks would otherwise be reused without any growth of the resident set.
        return [
            bytesPerObject(options),
            try detached(options),
            try recorded(options),
            try queued(options),
            try immediate(options),
            try crossModule(options),
            try get(options),
        ]
    }

    static func perSet(_ seconds: Double, _ count: Int) -> Double { seconds / Double(count) * 1e9 }

    // MARK: - model.set.detached

    /// A set on an object with no scope, parents or observers.
    static func detached(_ options: BenchOptions) throws -> BenchFigure {
        let count = options.iterations(5_000_000)
        let model = BenchPoint()
        let observable = ObservablePoint()
        let ours = Stopwatch.best { Mover.run(count) { Mover.move(model, to: $0) } }
        let theirs = Stopwatch.best { Mover.run(count) { Mover.move(observable, to: $0) } }
        try check("model.set.detached", model.x == Double(count - 1) && observable.x == Double(count - 1))
        return BenchFigure(name: "model.set.detached", value: perSet(ours, count), unit: "ns/set",
                           baseline: perSet(theirs, count))
    }

    // MARK: - model.set.recorded

    /// Sets on the points of a scope's tree, each recorded into the pending change set: every turn
    /// moves each of 1,000 points once, then the turn ends (untimed: the flush is `scope.record`'s
    /// figure). Baseline: the same sets on 1,000 `@Observable` points.
    static func recorded(_ options: BenchOptions) throws -> BenchFigure {
        let pointCount = options.smoke ? 10 : 1_000
        let turns = options.iterations(200, smoke: 2)
        let canvas = BenchCanvas()
        canvas.points = (0..<pointCount).map { _ in BenchPoint() }
        let scope = Scope(name: "bench")
        scope.root = canvas
        scope.flush()
        let counter = BenchObserver()
        var changeSets = 0
        scope.onChanges(counter) { changeSet in
            changeSets += 1
            counter.count += changeSet.fragments.count
        }
        let observables = (0..<pointCount).map { _ in ObservablePoint() }
        var rounds = 0
        let ours = bestOfTimedTurns(turns: turns, points: canvas.points, move: Mover.move, after: { ChangeDelivery.main.deliverPending() }) {
            rounds += 1
        }
        try check("model.set.recorded: \(changeSets) change sets with \(counter.count) fragments",
                  changeSets == rounds * turns && counter.count == rounds * turns * pointCount)
        let theirs = bestOfTimedTurns(turns: turns, points: observables, move: Mover.move, after: {}) {}
        try check("model.set.recorded: final values",
                  canvas.points[pointCount - 1].x == observables[pointCount - 1].x && canvas.points[0].x > 0)
        return BenchFigure(name: "model.set.recorded", value: perSet(ours, turns * pointCount), unit: "ns/set",
                           baseline: perSet(theirs, turns * pointCount))
    }

    /// The fastest of five rounds of `turns` turns, each moving every point once; only the sets are
    /// timed, not `after` (the end of the turn).
    static func bestOfTimedTurns<Point: AnyObject>(turns: Int, points: [Point], move: (Point, Double) -> Void,
                                                   after: () -> Void, round: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            var total = Duration.zero
            var value = 0.5
            for _ in 0..<turns {
                let start = ContinuousClock.now
                for point in points {
                    move(point, value)
                    value += 1
                }
                total += ContinuousClock.now - start
                after()
            }
            round()
            best = min(best, Stopwatch.seconds(total))
        }
        return best
    }

    // MARK: - model.set.queued

    /// Sets with one queued observer on `x`: 1,000 sets per turn, then the turn's delivery (the
    /// observer fires once). Baseline: one `withObservationTracking` per turn, re-armed after it
    /// fired (what an app does to follow an `@Observable` property).
    static func queued(_ options: BenchOptions) throws -> BenchFigure {
        let perTurn = 1_000
        let turns = options.iterations(2_000, smoke: 2)
        let count = perTurn * turns
        let model = BenchPoint()
        let observer = BenchObserver()
        try model.observeChange(observer, \.x) { _ in observer.count += 1 }
        let observable = ObservablePoint()
        var rounds = 0
        let ours = Stopwatch.best {
            var value = 0.5
            for _ in 0..<turns {
                for _ in 0..<perTurn {
                    Mover.move(model, to: value)
                    value += 1
                }
                ChangeDelivery.main.deliverPending()
            }
            rounds += 1
        }
        try check("model.set.queued: observer fired \(observer.count) times, expected \(rounds * turns)",
                  observer.count == rounds * turns)
        BenchSink.count = 0
        rounds = 0
        let theirs = Stopwatch.best {
            var value = 0.5
            for _ in 0..<turns {
                withObservationTracking { _ = observable.x } onChange: { BenchSink.count &+= 1 }
                for _ in 0..<perTurn {
                    Mover.move(observable, to: value)
                    value += 1
                }
            }
            rounds += 1
        }
        try check("model.set.queued baseline: onChange fired \(BenchSink.count) times, expected \(rounds * turns)",
                  BenchSink.count == rounds * turns)
        return BenchFigure(name: "model.set.queued", value: perSet(ours, count), unit: "ns/set",
                           baseline: perSet(theirs, count))
    }

    // MARK: - model.set.immediate

    /// Sets with one immediate observer on `x` (its body counts calls). Baseline: a
    /// `withObservationTracking` re-armed before every set, so its `onChange` runs on every set too.
    static func immediate(_ options: BenchOptions) throws -> BenchFigure {
        let count = options.iterations(2_000_000)
        let model = BenchPoint()
        let observer = BenchObserver()
        try model.observeChangeImmediately(observer, \.x) { _ in observer.count += 1 }
        let observable = ObservablePoint()
        var rounds = 0
        let ours = Stopwatch.best {
            Mover.run(count, from: 0.5) { Mover.move(model, to: $0) }
            rounds += 1
        }
        // Every round's values differ from the last value of the round before, so every set notifies.
        try check("model.set.immediate: observer fired \(observer.count) times, expected \(rounds * count)",
                  observer.count == rounds * count)
        BenchSink.count = 0
        rounds = 0
        let theirs = Stopwatch.best {
            Mover.run(count, from: 0.5) { value in
                withObservationTracking { _ = observable.x } onChange: { BenchSink.count &+= 1 }
                Mover.move(observable, to: value)
            }
            rounds += 1
        }
        try check("model.set.immediate baseline: onChange fired \(BenchSink.count) times, expected \(rounds * count)",
                  BenchSink.count == rounds * count)
        return BenchFigure(name: "model.set.immediate", value: perSet(ours, count), unit: "ns/set",
                           baseline: perSet(theirs, count))
    }

    // MARK: - model.set.cross_module

    /// `model.set.detached` with both classes declared in another module (a library).
    static func crossModule(_ options: BenchOptions) throws -> BenchFigure {
        let count = options.iterations(5_000_000)
        let model = LibraryPoint()
        let observable = LibraryObservablePoint()
        let ours = Stopwatch.best { Mover.run(count) { Mover.move(model, to: $0) } }
        let theirs = Stopwatch.best { Mover.run(count) { Mover.move(observable, to: $0) } }
        try check("model.set.cross_module", model.x == Double(count - 1) && observable.x == Double(count - 1))
        return BenchFigure(name: "model.set.cross_module", value: perSet(ours, count), unit: "ns/set",
                           baseline: perSet(theirs, count))
    }

    // MARK: - model.get

    /// A get outside observation tracking, through an ordinary non-inlined method, of an object in a
    /// scope (so it has tracking, as the objects an app shows do). Baseline: an `@Observable` get
    /// through the same call shape (which asks its registrar whether tracking is on, as ours does).
    static func get(_ options: BenchOptions) throws -> BenchFigure {
        let count = options.iterations(5_000_000)
        let canvas = BenchCanvas()
        canvas.points = [BenchPoint()]
        let scope = Scope(name: "bench.get")
        scope.root = canvas
        let model = canvas.points[0]
        model.x = 2
        let observable = ObservablePoint()
        observable.x = 2
        var ours = 0.0
        var theirs = 0.0
        let oursTime = Stopwatch.best {
            ours = 0
            for _ in 0..<count { ours += Mover.read(model) }
        }
        let theirsTime = Stopwatch.best {
            theirs = 0
            for _ in 0..<count { theirs += Mover.read(observable) }
        }
        try check("model.get: sums \(ours) and \(theirs), expected \(2 * Double(count))",
                  ours == 2 * Double(count) && theirs == ours)
        return BenchFigure(name: "model.get", value: perSet(oursTime, count), unit: "ns/get",
                           baseline: perSet(theirsTime, count))
    }

    // MARK: - model.bytes_per_object

    /// Resident bytes per detached object with four Doubles, against a plain final class with the
    /// same stored values. A million of each, so page-level noise is under a byte per object.
    static func bytesPerObject(_ options: BenchOptions) -> BenchFigure {
        let count = options.iterations(1_000_000)
        // Both sets stay alive until both are measured, so neither reuses the other's freed memory.
        let (ours, oursObjects) = residentBytes(count) { BenchPoint() }
        let (theirs, theirsObjects) = residentBytes(count) { PlainPoint() }
        BenchSink.consume(Double(oursObjects.count + theirsObjects.count))
        return BenchFigure(name: "model.bytes_per_object", value: ours, unit: "bytes", baseline: theirs)
    }

    /// Resident bytes per object: growth of the resident set (`/proc/self/statm`) while `count`
    /// objects are allocated. Returns the objects too, to keep them alive.
    static func residentBytes(_ count: Int, _ make: () -> AnyObject) -> (Double, [AnyObject]) {
        var objects: [AnyObject] = []
        objects.reserveCapacity(count)
        // Touch the array's pages first, so only the objects count.
        for _ in 0..<count { objects.append(objects.first ?? make()) }
        objects.removeAll(keepingCapacity: true)
        let before = residentSetBytes()
        for _ in 0..<count { objects.append(make()) }
        let after = residentSetBytes()
        for object in objects.prefix(16) { BenchSink.consume(object) }
        return (Double(after - before) / Double(count), objects)
    }

    /// The process's resident set in bytes (second field of `/proc/self/statm`, in pages).
    static func residentSetBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    static func check(_ what: String, _ condition: Bool) throws {
        guard condition else { throw CheckFailed(description: "\(what): check failed") }
    }
}
