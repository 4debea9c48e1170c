import Contrail
import Foundation

/// `contrail bench query`: live queries over a scope of 100,000 points, each figure against what an
/// app without them does in the same run. Times are the main thread's CPU time (`cpuSeconds`).
///
/// - `query.change`: one object changes and the turn ends, with 10 sorted, filtered queries with
///   windows of 50 open: the time of the set and the delivery, events included (the p50 of single
///   changes). Every change hits some window (the object is taken from one), so every sample
///   delivers events. Baseline: the same change, then for each of the 10 queries a re-filter,
///   re-sort, cut of the window and `CollectionDifference` against the window before. Checked:
///   every window equals re-filtering and re-sorting after the runs, and in 300 more changes each
///   delivery, replayed as a table view's batch update, turns the rows before into the rows after.
/// - `query.change.anywhere`: the same with the object picked anywhere in the scope (most changes
///   then reach no window).
/// - `query.open`: opening one query over the 100,000 points; baseline: `filter` + `sorted` of the
///   same objects (`scope.allObjects`).
/// - `query.bytes_per_query`: resident memory per open query (all matches are indexed, the window
///   is only what the collection shows); baseline: the same matches as a plain sorted array.
@MainActor
enum QueryBench {
    /// One query of the benchmark: its filter and sort key, as a query and as plain code.
    struct Spec {
        let filter: @MainActor (BenchPoint) -> Bool
        let sort: QuerySort<BenchPoint>
        let key: (BenchPoint) -> Double
        let descending: Bool
        let window: Range<Int>
    }

    static let specs: [Spec] = [
        Spec(filter: { $0.x < 0.5 }, sort: .ascending(\.y), key: { $0.y }, descending: false, window: 0..<50),
        Spec(filter: { $0.y < 0.4 }, sort: .descending(\.z), key: { $0.z }, descending: true, window: 0..<50),
        Spec(filter: { $0.z > 0.3 }, sort: .ascending(\.w), key: { $0.w }, descending: false, window: 50..<100),
        Spec(filter: { $0.w < 0.6 }, sort: .descending(\.x), key: { $0.x }, descending: true, window: 0..<50),
        Spec(filter: { $0.x > 0.2 }, sort: .ascending(\.z), key: { $0.z }, descending: false, window: 100..<150),
        Spec(filter: { $0.y > 0.5 }, sort: .descending(\.w), key: { $0.w }, descending: true, window: 0..<50),
        Spec(filter: { $0.z < 0.7 }, sort: .ascending(\.x), key: { $0.x }, descending: false, window: 0..<50),
        Spec(filter: { $0.w > 0.1 }, sort: .descending(\.y), key: { $0.y }, descending: true, window: 200..<250),
        Spec(filter: { $0.x < 0.9 }, sort: .ascending(\.w), key: { $0.w }, descending: false, window: 0..<50),
        Spec(filter: { $0.y < 0.8 }, sort: .descending(\.x), key: { $0.x }, descending: true, window: 0..<50),
    ]

    /// This thread's CPU time in seconds: the machine the figures are taken on is shared, and a
    /// wall clock there mostly measures the other processes. Both sides of every figure use it.
    static func cpuSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The CPU seconds of the fastest of `rounds` runs of `body`.
    static func best(rounds: Int, _ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<max(1, rounds) {
            let start = cpuSeconds()
            body()
            best = min(best, cpuSeconds() - start)
        }
        return best
    }

    struct CheckFailed: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let count = options.smoke ? 3_000 : 100_000
        var random = SystemRandomNumberGenerator()
        let canvas = BenchCanvas()
        canvas.points = (0..<count).map { _ in
            let point = BenchPoint()
            point.x = Double.random(in: 0..<1, using: &random)
            point.y = Double.random(in: 0..<1, using: &random)
            point.z = Double.random(in: 0..<1, using: &random)
            point.w = Double.random(in: 0..<1, using: &random)
            return point
        }
        let scope = Scope(name: "query-bench")
        scope.root = canvas
        scope.flush()
        // Memory first, before the timing runs have grown and freed the heap.
        let memory = try bytesPerQuery(scope)
        let open = try openFigure(scope, options)
        let changes = try changeFigures(scope, canvas, options)
        return [changes.window, changes.anywhere, open, memory]
    }

    /// The plain-code result of `spec`: filter, sort, window.
    static func brute(_ points: [BenchPoint], _ spec: Spec) -> [BenchPoint] {
        let sorted = points.filter(spec.filter).sorted { spec.descending ? spec.key($0) > spec.key($1) : spec.key($0) < spec.key($1) }
        return Array(sorted[min(sorted.count, spec.window.lowerBound)..<min(sorted.count, spec.window.upperBound)])
    }

    static func points(_ scope: Scope) -> [BenchPoint] {
        scope.allObjects.compactMap { $0 as? BenchPoint }
    }

    // MARK: - query.open

    static func openFigure(_ scope: Scope, _ options: BenchOptions) throws -> BenchFigure {
        let rounds = options.smoke ? 1 : 7
        var opened = 0
        let ours = best(rounds: rounds) {
            let query = scope.query(BenchPoint.self, where: { $0.x < 0.5 }, sortedBy: .ascending(\.y))
            opened = query.totalCount
            BenchSink.consume(query[0])
        }
        var plain: [BenchPoint] = []
        let theirs = best(rounds: rounds) {
            plain = scope.allObjects.compactMap { $0 as? BenchPoint }.filter { $0.x < 0.5 }.sorted { $0.y < $1.y }
            BenchSink.consume(plain[0])
        }
        let check = scope.query(BenchPoint.self, where: { $0.x < 0.5 }, sortedBy: .ascending(\.y))
        try require("query.open: \(opened) matches against \(plain.count), same order",
                    opened == plain.count && zip(check, plain).allSatisfy { $0 === $1 })
        return BenchFigure(name: "query.open", value: ours * 1e3, unit: "ms", baseline: theirs * 1e3)
    }

    // MARK: - query.change

    static func changeFigures(_ scope: Scope, _ canvas: BenchCanvas, _ options: BenchOptions) throws -> (window: BenchFigure, anywhere: BenchFigure) {
        var random = SystemRandomNumberGenerator()
        let queries = specs.map { spec in
            scope.query(BenchPoint.self, where: spec.filter, sortedBy: spec.sort, window: spec.window)
        }
        let counter = BenchObserver()
        for query in queries { query.onChanges(counter) { _ in counter.count += 1 } }
        let all = canvas.points
        let samples = options.iterations(3_000, smoke: 30)

        /// A change of one of the four properties to a new value: a new sort key for the queries that
        /// sort by it and maybe a new filter result for those that filter by it. Drawn before the
        /// clock starts (the generator is a system call), so the time is the change and its events.
        func draw() -> (property: Int, value: Double) {
            (Int.random(in: 0..<4, using: &random), Double.random(in: 0..<1, using: &random))
        }
        func change(_ point: BenchPoint, _ drawn: (property: Int, value: Double)) {
            switch drawn.property {
            case 0: point.x = drawn.value
            case 1: point.y = drawn.value
            case 2: point.z = drawn.value
            default: point.w = drawn.value
            }
        }
        func timed(_ pick: () -> BenchPoint) -> [Double] {
            var times: [Double] = []
            times.reserveCapacity(samples)
            for _ in 0..<samples {
                let point = pick()
                let drawn = draw()
                let start = cpuSeconds()
                change(point, drawn)
                ChangeDelivery.main.deliverPending()
                times.append(cpuSeconds() - start)
            }
            return times
        }
        ChangeDelivery.main.deliverPending()
        let before = counter.count
        let inWindows = timed {
            let query = queries[Int.random(in: 0..<queries.count, using: &random)]
            return query.isEmpty ? all[0] : query[Int.random(in: 0..<query.count, using: &random)]
        }
        let windowEvents = counter.count - before
        let anywhere = timed { all[Int.random(in: 0..<all.count, using: &random)] }
        try checkEvents(queries, samples: options.smoke ? 20 : 300) {
            let query = queries[Int.random(in: 0..<queries.count, using: &random)]
            change(query.isEmpty ? all[0] : query[Int.random(in: 0..<query.count, using: &random)], draw())
        }
        for (query, spec) in zip(queries, specs) {
            let expected = brute(points(scope), spec)
            try require("query.change: a window differs from re-filtering and re-sorting",
                        query.count == expected.count && zip(query, expected).allSatisfy { $0 === $1 })
        }
        try require("query.change: \(windowEvents) deliveries for \(samples) changes in windows", windowEvents >= samples)

        // Baseline: the same changes, each followed by re-filtering, re-sorting and diffing every window.
        var windows = specs.map { brute(points(scope), $0) }
        var differences = 0
        let baselineSamples = options.smoke ? 2 : 7
        var baseline: [Double] = []
        for _ in 0..<baselineSamples {
            let query = queries[Int.random(in: 0..<queries.count, using: &random)]
            let point = query.isEmpty ? all[0] : query[Int.random(in: 0..<query.count, using: &random)]
            let drawn = draw()
            let start = cpuSeconds()
            change(point, drawn)
            ChangeDelivery.main.deliverPending()
            let current = points(scope)
            for (index, spec) in specs.enumerated() {
                let next = brute(current, spec)
                let ids = next.map(ObjectIdentifier.init)
                differences += ids.difference(from: windows[index].map(ObjectIdentifier.init)).inferringMoves().count
                windows[index] = next
            }
            baseline.append(cpuSeconds() - start)
        }
        BenchSink.consume(Double(differences))
        let baselineP50 = Stopwatch.percentile(baseline, 0.5) * 1e6
        return (BenchFigure(name: "query.change", value: Stopwatch.percentile(inWindows, 0.5) * 1e6, unit: "µs p50",
                            baseline: baselineP50),
                BenchFigure(name: "query.change.anywhere", value: Stopwatch.percentile(anywhere, 0.5) * 1e6, unit: "µs p50",
                            baseline: baselineP50))
    }

    /// The deliveries a check received, by query.
    final class EventLog {
        var received: [[QueryChanges]]

        init(queries: Int) {
            received = Array(repeating: [], count: queries)
        }
    }

    /// Makes `samples` changes with `change`, one per turn, and checks that each query's delivery,
    /// replayed on the rows it showed before as a table view applies a batch update, gives the rows
    /// it shows after (and that a query without a delivery shows the same rows).
    static func checkEvents(_ queries: [LiveQuery<BenchPoint>], samples: Int, _ change: () -> Void) throws {
        let log = EventLog(queries: queries.count)
        for (index, query) in queries.enumerated() { query.onChanges(log) { log.received[index].append($0) } }
        var rows = queries.map { $0.map(ObjectIdentifier.init) }
        var deliveries = 0
        for _ in 0..<samples {
            change()
            ChangeDelivery.main.deliverPending()
            for (index, query) in queries.enumerated() {
                let now = query.map(ObjectIdentifier.init)
                let received = log.received[index]
                log.received[index].removeAll()
                try require("query.change: \(received.count) deliveries in one turn", received.count <= 1)
                if let changes = received.first {
                    deliveries += 1
                    try require("query.change: \(changes) does not turn the rows before into the rows after",
                                replayed(changes, on: rows[index], new: now) == now)
                } else {
                    try require("query.change: rows changed without a delivery", now == rows[index])
                }
                rows[index] = now
            }
        }
        try require("query.change: \(deliveries) deliveries for \(samples) changes in windows", deliveries >= samples)
    }

    /// `old` with `changes` applied as a table view applies a batch update (delete, insert, move;
    /// every other row keeps its order), inserted rows taken from `new`; nil when they are not a
    /// valid batch.
    static func replayed(_ changes: QueryChanges, on old: [ObjectIdentifier], new: [ObjectIdentifier]) -> [ObjectIdentifier]? {
        guard changes.oldCount == old.count, changes.newCount == new.count else { return nil }
        let sources = Set(changes.moved.map(\.from))
        guard sources.count == changes.moved.count, Set(changes.moved.map(\.to)).count == changes.moved.count,
              changes.removed.allSatisfy({ $0 < old.count && !sources.contains($0) }),
              changes.inserted.allSatisfy({ $0 < new.count }), changes.updated.allSatisfy({ $0 < old.count && !changes.removed.contains($0) }),
              changes.moved.allSatisfy({ $0.from < old.count && $0.to < new.count && !changes.inserted.contains($0.to) }) else { return nil }
        var result: [ObjectIdentifier?] = Array(repeating: nil, count: new.count)
        for index in changes.inserted { result[index] = new[index] }
        for move in changes.moved { result[move.to] = old[move.from] }
        var rest = old.indices.filter { !changes.removed.contains($0) && !sources.contains($0) }.map { old[$0] }[...]
        for index in result.indices where result[index] == nil {
            guard let next = rest.popFirst() else { return nil }
            result[index] = next
        }
        return rest.isEmpty ? result.map { $0! } : nil
    }

    // MARK: - query.bytes_per_query

    static func bytesPerQuery(_ scope: Scope) throws -> BenchFigure {
        let points = points(scope)
        let before = ModelBench.residentSetBytes()
        let queries = specs.map { spec in scope.query(BenchPoint.self, where: spec.filter, sortedBy: spec.sort, window: spec.window) }
        let middle = ModelBench.residentSetBytes()
        let arrays = specs.map { spec in points.filter(spec.filter).sorted { spec.key($0) < spec.key($1) } }
        let after = ModelBench.residentSetBytes()
        try require("query.bytes_per_query: the queries hold their matches",
                    zip(queries, arrays).allSatisfy { $0.totalCount == $1.count })
        let ours = Double(middle - before) / Double(queries.count)
        let theirs = Double(after - middle) / Double(arrays.count)
        return BenchFigure(name: "query.bytes_per_query", value: ours, unit: "bytes", baseline: theirs)
    }

    static func require(_ what: String, _ condition: Bool) throws {
        guard condition else { throw CheckFailed(description: "\(what): check failed") }
    }
}
