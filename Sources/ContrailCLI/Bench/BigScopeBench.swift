import Contrail
import Foundation
import Observation

/// `contrail bench bigscope`: the first sync of a big scope (issue 26, item 4; Protocol §8.25).
/// A `contrail serve` child holds a scope of `objects` tiles (three integers each: 100,000 by
/// default, `--objects N`), in groups of 1,000 under the root (one collection of a million would be
/// a 39 MB root fragment, over the 16 MiB message limit); a client in this process fetches it over
/// a WebSocket on 127.0.0.1.
///
/// - `bigscope.usable.<n>`: seconds from `connect()` to `fetch` returning (the scope usable, every
///   object checked). Baseline: the same tiles read from a local JSON file with `Codable` into
///   `@Observable` objects, in the same run.
/// - `bigscope.peakrss.<n>`: the client process's peak resident memory during that fetch, above
///   what it held before (MiB; `/proc/self/clear_refs` resets the peak). Baseline: the same for the
///   `Codable` load.
@MainActor
enum BigScopeBench {
    static func run(_ options: BenchOptions, objects: Int? = nil) async throws -> [BenchFigure] {
        let count = objects ?? options.iterations(100_000, smoke: 2_000)
        let server = try await ServeChild.start(["--max-objects", "\(count + count / 1_000 + 2)"])
        defer { server.stop() }
        let url = "ws://127.0.0.1:\(server.port)/"
        try await populate(url: url, count: count)
        let label = count % 1_000 == 0 ? "\(count / 1_000)k" : "\(count)"

        let before = try resetPeak()
        let start = ContinuousClock.now
        let scope = Scope(name: "bigscope")
        let board = BenchTileBoard()
        scope.root = board
        let client = Client(url: url)
        let session = try await client.connect()
        try await session.fetch(scope)
        let usable = Stopwatch.seconds(ContinuousClock.now - start)
        let peak = try peakGrowth(since: before)
        let tiles = board.groups.flatMap(\.tiles)
        guard tiles.count == count, tiles.enumerated().allSatisfy({ $1.a == $0 && $1.b == 2 * $0 && $1.c == 3 * $0 }) else {
            throw SyncBenchError("bigscope: the fetched scope holds \(tiles.count) tiles, not the \(count) written")
        }
        await client.close()

        let file = FileManager.default.temporaryDirectory.appending(path: "contrail-bigscope-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let records = (0..<count).map { TileRecord(uuid: UUID(), a: $0, b: 2 * $0, c: 3 * $0) }
        try JSONEncoder().encode(records).write(to: file)
        let baseBefore = try resetPeak()
        let baseStart = ContinuousClock.now
        let decoded = try JSONDecoder().decode([TileRecord].self, from: Data(contentsOf: file))
        let loaded = decoded.map { ObservableTile(uuid: $0.uuid, a: $0.a, b: $0.b, c: $0.c) }
        let baseline = Stopwatch.seconds(ContinuousClock.now - baseStart)
        let basePeak = try peakGrowth(since: baseBefore)
        guard loaded.count == count, loaded.enumerated().allSatisfy({ $1.a == $0 && $1.c == 3 * $0 }) else {
            throw SyncBenchError("bigscope: the JSON file gave \(loaded.count) tiles")
        }
        return [
            BenchFigure(name: "bigscope.usable.\(label)", value: usable, unit: "s", baseline: baseline),
            BenchFigure(name: "bigscope.peakrss.\(label)", value: peak, unit: "MiB", baseline: basePeak),
        ]
    }

    /// Writes `count` tiles (tile i holds i, 2i, 3i) to the scope through a client, in change sets
    /// within the server's fragment limit, and waits until the server has them all.
    static func populate(url: String, count: Int) async throws {
        let scope = Scope(name: "bigscope")
        let board = BenchTileBoard()
        scope.root = board
        var options = ClientOptions()
        options.maxPendingMessages = 100_000
        // The last of a million tiles' change sets waits for the server to apply all before it.
        options.replyTimeout = StoreBench.replyTimeout(objects: count)
        let client = try await Client.sync(scope, url: url, options: options)
        var written = 0
        while written < count {
            // Nine groups of 1,000 per change set: within the 10,000 fragments of one ScopeSync.
            for _ in 0..<9 where written < count {
                let group = BenchTileGroup()
                group.tiles = (written..<min(count, written + 1_000)).map { n in
                    let tile = BenchTile()
                    tile.a = n
                    tile.b = 2 * n
                    tile.c = 3 * n
                    return tile
                }
                board.groups.append(group)
                written += group.tiles.count
            }
            scope.flush()
        }
        let deadline = ContinuousClock.now + .seconds(600)
        while (client.session?.pendingChangeSets ?? 1) > 0 {
            guard ContinuousClock.now < deadline else { throw SyncBenchError("bigscope: the tiles were not written in time") }
            try await Task.sleep(for: .milliseconds(20))
        }
        await client.close()
    }

    /// Resets the process's peak resident memory to its current value and returns that (bytes).
    static func resetPeak() throws -> Int {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return try status("VmRSS:")
    }

    /// The peak resident memory since `before` (bytes, from ``resetPeak()``), above it, in MiB.
    static func peakGrowth(since before: Int) throws -> Double {
        Double(max(0, try status("VmHWM:") - before)) / Double(1 << 20)
    }

    /// A `/proc/self/status` line's kB value, in bytes.
    static func status(_ key: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }),
              let kB = Int(line.dropFirst(key.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else {
            throw SyncBenchError("bigscope: no \(key) in /proc/self/status")
        }
        return kB * 1024
    }
}

/// A tile of the big scope: three integers.
final class BenchTile: ModelObject {
    @Property var a = 0
    @Property var b = 0
    @Property var c = 0
}

/// A group of up to 1,000 tiles.
final class BenchTileGroup: ModelObject {
    @Property var tiles: [BenchTile] = []
}

/// The root of the big scope: holds the groups.
final class BenchTileBoard: ModelObject {
    @Property var groups: [BenchTileGroup] = []
}

/// A tile as the baseline's JSON file holds it.
struct TileRecord: Codable {
    var uuid: UUID
    var a: Int
    var b: Int
    var c: Int
}

/// The baseline's tile: the same three integers, observed by the Observation module.
@Observable
final class ObservableTile {
    let uuid: UUID
    var a: Int
    var b: Int
    var c: Int

    init(uuid: UUID, a: Int, b: Int, c: Int) {
        self.uuid = uuid
        self.a = a
        self.b = b
        self.c = c
    }
}
