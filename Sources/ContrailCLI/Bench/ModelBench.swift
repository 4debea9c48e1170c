import Contrail
import Foundation
import Glibc
import Observation

/// `contrail bench model`: the cost of a property set (unobserved, observed immediately, observed
/// queued) and the memory of a model object, each against the Observation module or a plain class.
@MainActor
enum ModelBench {
    /// A benchmark whose own sanity check failed (an observer fired the wrong number of times).
    struct CheckFailed: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        [
            unobserved(options),
            try immediate(options),
            try queued(options),
            bytesPerObject(options),
        ]
    }

    // MARK: - model.set.unobserved

    static func unobserved(_ options: BenchOptions) -> BenchFigure {
        let count = options.iterations(5_000_000)
        let model = BenchPoint()
        let observable = ObservablePoint()
        let ours = Stopwatch.best { setModel(model, count) }
        let theirs = Stopwatch.best { setObservable(observable, count) }
        BenchSink.consume(model.x + observable.x)
        return BenchFigure(name: "model.set.unobserved", value: ours / Double(count) * 1e9, unit: "ns/set",
                           baseline: theirs / Double(count) * 1e9)
    }

    @inline(never)
    static func setModel(_ model: BenchPoint, _ count: Int) {
        var value = 0.0
        for _ in 0..<count {
            model.x = value
            value += 1
        }
    }

    @inline(never)
    static func setObservable(_ model: ObservablePoint, _ count: Int) {
        var value = 0.0
        for _ in 0..<count {
            model.x = value
            value += 1
        }
    }

    // MARK: - model.set.immediate

    static func immediate(_ options: BenchOptions) throws -> BenchFigure {
        let count = options.iterations(1_000_000)
        let model = BenchPoint()
        let observer = BenchObserver()
        model.observeChangeImmediately(observer, \.x) { observer.count += 1 }
        let observable = ObservablePoint()
        var rounds = 0
        let ours = Stopwatch.best {
            setModel(model, count)
            rounds += 1
        }
        // Rounds start at 0: only the very first set (0 onto 0) is a no-op that notifies nobody.
        let expected = rounds * count - 1
        guard observer.count == expected else {
            throw CheckFailed(description: "model.set.immediate: observer fired \(observer.count) times, expected \(expected)")
        }
        BenchSink.count = 0
        rounds = 0
        let theirs = Stopwatch.best {
            setObservableTracked(observable, count)
            rounds += 1
        }
        guard BenchSink.count == rounds * count else {
            throw CheckFailed(description: "model.set.immediate baseline: onChange fired \(BenchSink.count) times, expected \(rounds * count)")
        }
        return BenchFigure(name: "model.set.immediate", value: ours / Double(count) * 1e9, unit: "ns/set",
                           baseline: theirs / Double(count) * 1e9)
    }

    /// Sets `x` under an active `withObservationTracking`, registered again before every set
    /// (its `onChange` fires once per registration).
    @inline(never)
    static func setObservableTracked(_ model: ObservablePoint, _ count: Int) {
        var value = 0.5
        for _ in 0..<count {
            withObservationTracking {
                _ = model.x
            } onChange: {
                BenchSink.count &+= 1
            }
            model.x = value
            value += 1
        }
    }

    // MARK: - model.set.queued

    static func queued(_ options: BenchOptions) throws -> BenchFigure {
        let perTurn = 1_000
        let turns = options.iterations(1_000, smoke: 2)
        let count = perTurn * turns
        let model = BenchPoint()
        let observer = BenchObserver()
        model.observeChange(observer, \.x) { observer.count += 1 }
        let observable = ObservablePoint()
        var rounds = 0
        let ours = Stopwatch.best {
            setModelQueued(model, turns: turns, perTurn: perTurn)
            rounds += 1
        }
        guard observer.count == rounds * turns else {
            throw CheckFailed(description: "model.set.queued: observer fired \(observer.count) times, expected \(rounds * turns)")
        }
        BenchSink.count = 0
        rounds = 0
        let theirs = Stopwatch.best {
            setObservableTrackedPerTurn(observable, turns: turns, perTurn: perTurn)
            rounds += 1
        }
        guard BenchSink.count == rounds * turns else {
            throw CheckFailed(description: "model.set.queued baseline: onChange fired \(BenchSink.count) times, expected \(rounds * turns)")
        }
        return BenchFigure(name: "model.set.queued", value: ours / Double(count) * 1e9, unit: "ns/set",
                           baseline: theirs / Double(count) * 1e9)
    }

    /// `perTurn` sets, then the end of the turn (queued delivery), `turns` times.
    @inline(never)
    static func setModelQueued(_ model: BenchPoint, turns: Int, perTurn: Int) {
        var value = 0.5
        for _ in 0..<turns {
            for _ in 0..<perTurn {
                model.x = value
                value += 1
            }
            NotificationQueue.main.deliverPending()
        }
    }

    /// The Observation module's equivalent of a queued observer: one tracking registration per
    /// turn (it fires once, on the first set), registered again after the turn.
    @inline(never)
    static func setObservableTrackedPerTurn(_ model: ObservablePoint, turns: Int, perTurn: Int) {
        var value = 0.5
        for _ in 0..<turns {
            withObservationTracking {
                _ = model.x
            } onChange: {
                BenchSink.count &+= 1
            }
            for _ in 0..<perTurn {
                model.x = value
                value += 1
            }
        }
    }

    // MARK: - model.bytes_per_object

    static func bytesPerObject(_ options: BenchOptions) -> BenchFigure {
        let count = options.iterations(200_000)
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
}
