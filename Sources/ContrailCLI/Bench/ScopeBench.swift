import Contrail
import Foundation
import Observation

/// `contrail bench scope`: recording local changes on an attached tree, and decoding + applying
/// remote fragments, each against the same work without Contrail's part (unattached sets, a
/// `JSONSerialization` parse of the same bytes).
@MainActor
enum ScopeBench {
    /// A benchmark whose own sanity check failed.
    struct CheckFailed: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        switch options.only {
        case nil: break
        case "log_modify": return try await logModifyLatency(options)
        case let part?: throw CheckFailed(description: "scope has no part '\(part)' (parts: log_modify)")
        }
        return [try record(options), try applyJSON(options)] + (try logFigures(options)) + (try await logModifyLatency(options)) + [try await logRestoreLarge(options)]
    }

    /// A scope whose root holds `count` points.
    static func makeTree(points count: Int) -> (Scope, BenchCanvas) {
        let scope = Scope(name: "bench")
        let canvas = BenchCanvas()
        canvas.points = (0..<count).map { _ in BenchPoint() }
        scope.root = canvas
        scope.historyLimit = 16
        return (scope, canvas)
    }

    // MARK: - scope.log_append, scope.log_restore

    /// MB/s of change sets appended to a `FragmentLog` (encoding and checksummed records, no
    /// fsync) and of restoring a scope from that file (reading, decoding and applying every change
    /// set to the tree the log's snapshot rebuilds), against `FileHandle` writing the same bytes
    /// record by record and reading them back. The restore is checked: every point holds the value
    /// its last move gave it. Restores and reads take five turns each, alternating; each keeps its best.
    static func logFigures(_ options: BenchOptions) throws -> [BenchFigure] {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Change sets of 100 point moves each, on a tree of 1,000 points whose first state is the
        // seed log's snapshot.
        let pointCount = options.smoke ? 10 : 1_000
        let (source, canvas) = makeTree(points: pointCount)
        source.flush()
        let seedURL = directory.appending(path: "seed")
        let seed = FragmentLog(url: seedURL, fsync: .never)
        try seed.attach(to: source)
        try seed.close()
        var changeSets: [ChangeSet] = []
        for turn in 0..<options.iterations(2_000, smoke: 5) {
            for index in 0..<100 { canvas.points[(turn * 100 + index) % canvas.points.count].x = Double(turn) }
            if let changeSet = source.flush() { changeSets.append(changeSet) }
        }
        var round = 0
        var logURL = directory
        var payloads: [Int] = []
        // Each round restores the seed (1,000 points, under 1% of the round) and appends to it.
        let appendTime = try Stopwatch.best(rounds: 3) {
            round += 1
            logURL = directory.appending(path: "log-\(round)")
            try FileManager.default.copyItem(at: seedURL, to: logURL)
            let log = FragmentLog(url: logURL, fsync: .never)
            log.compactionThreshold = .max
            let scope = Scope(name: "bench")
            try log.attach(to: scope)
            for changeSet in changeSets { try log.append(changeSet) }
            try log.close()
            withExtendedLifetime(scope) {}
        }
        let bytes = try Data(contentsOf: logURL)
        for record in try LogFile.read(at: logURL).records { payloads.append(record.payload.count + 13) }
        let handleAppendTime = try Stopwatch.best(rounds: 3) {
            let url = directory.appending(path: "plain-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw CheckFailed(description: "scope.log_restore: cannot create \(url.path)")
            }
            let handle = try FileHandle(forWritingTo: url)
            var offset = 0
            for size in payloads {
                handle.write(bytes[offset..<offset + size])
                offset += size
            }
            try handle.close()
        }
        var restoredCount = 0
        var restored: [Scope] = []  // kept: tearing a tree down is not part of restoring it
        // Restores and plain reads take turns, so that both see the same machine load; each keeps its best.
        var restoreTime = Double.infinity
        var readTime = Double.infinity
        for _ in 0..<5 {
            restoreTime = min(restoreTime, try Stopwatch.best(rounds: 1) {
                let scope = Scope(name: "bench")
                let log = FragmentLog(url: logURL, fsync: .never)
                restoredCount = try log.attach(to: scope).records
                try log.close()
                restored.append(scope)
            })
            readTime = min(readTime, try Stopwatch.best(rounds: 1) {
                let handle = try FileHandle(forReadingFrom: logURL)
                BenchSink.consume(Double(try handle.readToEnd()?.count ?? 0))
                try handle.close()
            })
        }
        let restoredPoints = (restored.last?.root as? BenchCanvas)?.points ?? []
        guard restoredCount == changeSets.count + 1, restoredPoints.count == canvas.points.count,
              zip(restoredPoints, canvas.points).allSatisfy({ $0.uuid == $1.uuid && $0.x == $1.x }) else {
            throw CheckFailed(description: "scope.log_restore: restored \(restoredCount) records and \(restoredPoints.count) points, expected \(changeSets.count + 1) and the source's \(canvas.points.count)")
        }
        let megabytes = Double(bytes.count) / 1e6
        return [
            BenchFigure(name: "scope.log_append", value: megabytes / appendTime, unit: "MB/s", baseline: megabytes / handleAppendTime),
            BenchFigure(name: "scope.log_restore", value: megabytes / restoreTime, unit: "MB/s", baseline: megabytes / readTime),
        ]
    }

    // MARK: - scope.log_modify_p99

    /// The main actor's time per change set with a `FragmentLog` attached (default policy: every
    /// record synced): the 99th percentile and the median, in µs (wall time), of 10,000
    /// `scope.modify` calls that move 10 points (each flushed into its change set inside the call),
    /// while the log's writer thread is busy with the ones before and another thread writes and
    /// syncs 1 MiB at a time on the same disk; against the same calls on a scope without a log.
    /// The two scopes take turns, call by call, so both see the same machine load and the same
    /// writer thread at work. The bench checks afterwards that every change set reached the file
    /// and that the disk load ran.
    static func logModifyLatency(_ options: BenchOptions) async throws -> [BenchFigure] {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = options.iterations(10_000, smoke: 20)
        let load = DiskLoad(url: directory.appending(path: "disk-load"))
        defer { load.stop() }
        let url = directory.appending(path: "modify.log")
        let log = FragmentLog(url: url)
        let (logged, loggedCanvas) = makeTree(points: 100)
        let (bare, bareCanvas) = makeTree(points: 100)
        try log.attach(to: logged)
        var loggedSamples: [Double] = []
        var bareSamples: [Double] = []
        loggedSamples.reserveCapacity(count)
        bareSamples.reserveCapacity(count)
        func modify(_ scope: Scope, _ canvas: BenchCanvas, turn: Int) -> Double {
            let start = ContinuousClock.now
            scope.modify {
                for index in 0..<10 { canvas.points[(turn * 10 + index) % 100].x = Double(turn + 1) }
            }
            return Stopwatch.seconds(ContinuousClock.now - start) * 1e6
        }
        for turn in 0..<count {
            // Alternate which goes first, so neither always runs right after the other's hand-off.
            if turn.isMultiple(of: 2) {
                loggedSamples.append(modify(logged, loggedCanvas, turn: turn))
                bareSamples.append(modify(bare, bareCanvas, turn: turn))
            } else {
                bareSamples.append(modify(bare, bareCanvas, turn: turn))
                loggedSamples.append(modify(logged, loggedCanvas, turn: turn))
            }
        }
        try await log.waitUntilDurable()
        try log.close()
        let written = try FragmentLog.history(at: url).count
        guard written == count else {
            throw CheckFailed(description: "scope.log_modify_p99: the log holds \(written) change sets, expected \(count)")
        }
        guard load.syncs.load(ordering: .relaxed) > 0 else {
            throw CheckFailed(description: "scope.log_modify_p99: the disk load did not run")
        }
        return [0.99, 0.5].map { p in
            BenchFigure(name: "scope.log_modify_p\(Int(p * 100))", value: Stopwatch.percentile(loggedSamples, p), unit: "µs",
                        baseline: Stopwatch.percentile(bareSamples, p))
        }
    }

    // MARK: - scope.log_restore_100k

    /// Milliseconds until a scope of 100,000 points is usable again from its compacted log
    /// (`FragmentLog.attach` into an empty scope, then `close`; the restored scopes are kept, so
    /// their teardown is not timed), against what an app without Contrail does at launch: read the
    /// same points from a `Codable` JSON file (`JSONDecoder`) into `@Observable` points. Checked on
    /// both sides: every point is there with its value (and, restored, attached under the root).
    static func logRestoreLarge(_ options: BenchOptions) async throws -> BenchFigure {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appending(path: "large.log")
        let points = options.smoke ? 100 : 100_000
        let savedURL = directory.appending(path: "points.json")
        do {
            let (scope, canvas) = makeTree(points: points)
            for (index, point) in canvas.points.enumerated() { point.x = Double(index) }
            scope.flush()
            try JSONEncoder().encode(canvas.points.map { SavedPoint(id: $0.uuid, x: $0.x, y: $0.y, z: $0.z, w: $0.w) })
                .write(to: savedURL)
            let log = FragmentLog(url: url, fsync: .never)
            try log.attach(to: scope)
            try await log.waitUntilDurable()
            try log.close()
        }
        var restored: [Scope] = []  // kept: tearing a tree down is not part of restoring it
        let restoreTime = try Stopwatch.best(rounds: 3) {
            let scope = Scope(name: "bench")
            let log = FragmentLog(url: url, fsync: .never)
            try log.attach(to: scope)
            try log.close()
            restored.append(scope)
        }
        let restoredPoints = (restored.last?.root as? BenchCanvas)?.points ?? []
        guard let scope = restored.last, scope.count == points + 1, restoredPoints.count == points,
              restoredPoints.enumerated().allSatisfy({ scope.object(for: $1.uuid) === $1 && $1.parents.count == 1 && $1.x == Double($0) }) else {
            throw CheckFailed(description: "scope.log_restore_100k: restored \(restored.last?.count ?? 0) objects, expected \(points + 1) attached under the root with their values")
        }
        var loaded: [[ObservablePoint]] = []  // kept, as the restored scopes are
        let codableTime = try Stopwatch.best(rounds: 3) {
            let saved = try JSONDecoder().decode([SavedPoint].self, from: Data(contentsOf: savedURL))
            loaded.append(saved.map { record in
                let point = ObservablePoint()
                (point.x, point.y, point.z, point.w) = (record.x, record.y, record.z, record.w)
                return point
            })
        }
        let loadedPoints = loaded.last ?? []
        guard loadedPoints.count == points, loadedPoints.enumerated().allSatisfy({ $1.x == Double($0) }) else {
            throw CheckFailed(description: "scope.log_restore_100k: the Codable baseline loaded \(loadedPoints.count) points, expected \(points) with their values")
        }
        return BenchFigure(name: "scope.log_restore_100k", value: restoreTime * 1e3, unit: "ms", baseline: codableTime * 1e3)
    }

    // MARK: - scope.record

    /// Sets per second of `x` on the points of an attached tree (1,000 sets per turn, each turn
    /// ending in the scope's flush into one change set), against what an app does without Contrail
    /// to learn what changed in a turn: `@Observable` points, each tracked with
    /// `withObservationTracking` re-armed every turn, and the changed points' values collected at the
    /// end of the turn.
    static func record(_ options: BenchOptions) throws -> BenchFigure {
        let pointCount = options.smoke ? 10 : 1_000
        let perTurn = 1_000
        let turns = options.iterations(100, smoke: 2)
        let (scope, canvas) = makeTree(points: pointCount)
        scope.flush()
        var changeSets = 0
        let counter = BenchObserver()
        scope.onChanges(counter) { changeSet in
            changeSets += 1
            counter.count += changeSet.fragments.count
        }
        var rounds = 0
        let attachedTime = Stopwatch.best(rounds: 3) {
            setPoints(canvas.points, turns: turns, perTurn: perTurn)
            rounds += 1
        }
        let expected = rounds * turns * min(perTurn, pointCount)
        guard changeSets == rounds * turns, counter.count == expected else {
            throw CheckFailed(description: "scope.record: \(changeSets) change sets with \(counter.count) fragments, expected \(rounds * turns) with \(expected)")
        }
        let observables = (0..<pointCount).map { _ in ObservablePoint() }
        let collected = ChangeCollector()
        rounds = 0
        let observableTime = Stopwatch.best(rounds: 3) {
            setObservablesTracked(observables, turns: turns, perTurn: perTurn, into: collected)
            rounds += 1
        }
        guard collected.changes == expected else {
            throw CheckFailed(description: "scope.record baseline: collected \(collected.changes) changes, expected \(expected)")
        }
        BenchSink.consume(canvas.points[0].x + observables[0].x)
        let sets = Double(turns * perTurn)
        return BenchFigure(name: "scope.record", value: sets / attachedTime, unit: "sets/s", baseline: sets / observableTime)
    }

    /// `perTurn` sets of `x` round-robin over `points`, then the end of the turn.
    @inline(never)
    static func setPoints(_ points: [BenchPoint], turns: Int, perTurn: Int) {
        var value = 0.5
        for _ in 0..<turns {
            for index in 0..<perTurn {
                Mover.move(points[index % points.count], to: value)
                value += 1
            }
            ChangeDelivery.main.deliverPending()
        }
    }

    /// The same sets on `@Observable` points, each tracked once per turn; at the end of the turn
    /// the changed points' new values are collected (what a change set holds).
    @inline(never)
    static func setObservablesTracked(_ points: [ObservablePoint], turns: Int, perTurn: Int, into collector: ChangeCollector) {
        var value = 0.5
        for _ in 0..<turns {
            for (index, point) in points.enumerated() {
                withObservationTracking { _ = point.x } onChange: { collector.changed(index) }
            }
            for index in 0..<perTurn {
                Mover.move(points[index % points.count], to: value)
                value += 1
            }
            collector.endTurn(points)
        }
    }

    // MARK: - scope.apply_json

    /// Fragments per second decoded from a `ScopeSync` frame's bytes (our parser, `MessageFrame`,
    /// `SyncFragment(json:)`) and applied with `scope.apply`, against `JSONSerialization` parsing
    /// the same bytes into Foundation objects and nothing else.
    static func applyJSON(_ options: BenchOptions) throws -> BenchFigure {
        let pointCount = options.smoke ? 10 : 1_000
        let applies = options.iterations(40, smoke: 2)
        let (scope, canvas) = makeTree(points: pointCount)
        scope.flush()
        // Two frames with different values, applied alternately, so every apply changes the tree.
        let frames = [1.0, 2.0].map { base in
            let fragments = canvas.points.enumerated().map { index, point in
                SyncFragment(kind: .change, uuid: point.uuid, className: BenchPoint.className,
                             properties: ["x": .double(base + Double(index)), "y": .double(base * 0.5 + Double(index))])
            }
            return MessageFrame.encodedBytes([.scopeSync(ScopeSync(index: 1, scopeIndex: 0, fragments: fragments))], asArray: false)
        }
        let datas = frames.map { Data($0) }
        var applied = 0
        let oursTime = try Stopwatch.best(rounds: 3) {
            for turn in 0..<applies {
                let messages = try MessageFrame.decode(frames[turn & 1])
                guard case .scopeSync(let sync)? = messages.first else {
                    throw CheckFailed(description: "scope.apply_json: the frame did not decode to a ScopeSync")
                }
                applied += try scope.apply(sync.fragments).appliedFragments
            }
        }
        let expectedX = Double((applies - 1) & 1) + 1 + Double(pointCount - 1)
        guard canvas.points[pointCount - 1].x == expectedX, applied % (applies * pointCount) == 0 else {
            throw CheckFailed(description: "scope.apply_json: last point has x \(canvas.points[pointCount - 1].x), expected \(expectedX)")
        }
        var parsed = 0
        let theirsTime = try Stopwatch.best(rounds: 3) {
            for turn in 0..<applies {
                let object = try JSONSerialization.jsonObject(with: datas[turn & 1])
                if let message = object as? [String: Any], let fragments = message["fragments"] as? [Any] {
                    parsed += fragments.count
                }
            }
        }
        guard parsed % (applies * pointCount) == 0, parsed > 0 else {
            throw CheckFailed(description: "scope.apply_json baseline: JSONSerialization found \(parsed) fragments")
        }
        let fragments = Double(applies * pointCount)
        return BenchFigure(name: "scope.apply_json", value: fragments / oursTime, unit: "frags/s", baseline: fragments / theirsTime)
    }
}

/// Collects which `@Observable` points changed in a turn, as the `scope.record` baseline.
/// `@unchecked Sendable`: `onChange` is a `@Sendable` closure, but the benchmark runs it only
/// synchronously inside sets made on the main actor (asserted in debug builds).
final class ChangeCollector: @unchecked Sendable {
    private var changedIndices: [Int] = []
    private(set) var changes = 0
    private var values: [(Int, Double)] = []

    func changed(_ index: Int) {
        assert(Thread.isMainThread, "scope.record baseline: onChange ran off the main thread")
        changedIndices.append(index)
    }

    @MainActor
    func endTurn(_ points: [ObservablePoint]) {
        values.removeAll(keepingCapacity: true)
        for index in changedIndices { values.append((index, points[index].x)) }
        changes += values.count
        changedIndices.removeAll(keepingCapacity: true)
    }
}

/// One point as an app without Contrail saves it: the `scope.log_restore_100k` baseline's file format.
private struct SavedPoint: Codable {
    var id: UUID
    var x, y, z, w: Double
}
