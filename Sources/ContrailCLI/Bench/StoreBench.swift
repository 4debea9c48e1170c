import Contrail
import Foundation

/// `contrail bench store`: what a loaded scope costs the server (issue 24, item 4). A
/// `contrail serve --data` child receives `objects` tiles of three integers (100,000 by default,
/// `--objects N`; the `bigscope` scope's shape), is stopped, and a fresh child on the same data
/// directory loads the scope from its log when a client fetches it.
///
/// - `store.rss.<n>`: the fresh child's resident memory after the fetch (the client gone), above
///   what it held before it, per object (bytes). Baseline: the scope's state as JSON
///   (`{"root", "objects": {uuid: {"clsName", "properties"}}}`, as `JSONSerialization` writes it),
///   per object.
/// - `store.anon.<n>`: the same for its anonymous memory alone (`RssAnon`: the heap, without the
///   pages of code and libraries the load and the fetch ran for the first time). Same baseline.
/// - `store.load.<n>`: the fresh child's CPU seconds for that first fetch: reading and replaying the
///   log, and encoding and sending the state. Baseline: `JSONSerialization` parsing the state's
///   JSON above, in this process, in the same run.
/// - `store.apply.<n>`: the first child's CPU seconds to accept the tiles (change sets of 9,000
///   fragments from one client, each logged). Baseline: the same parse.
@MainActor
enum StoreBench {
    static func run(_ options: BenchOptions, objects: Int? = nil) async throws -> [BenchFigure] {
        let count = objects ?? options.iterations(100_000, smoke: 2_000)
        let label = count % 1_000 == 0 ? "\(count / 1_000)k" : "\(count)"
        let data = FileManager.default.temporaryDirectory.appending(path: "contrail-store-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: data) }
        let arguments = ["--data", data.path(percentEncoded: false), "--max-objects", "\(count + count / 1_000 + 2)"]

        let writer = try await ServeChild.start(arguments)
        let applyStart = try writer.cpuSeconds()
        do {
            try await BigScopeBench.populate(url: "ws://127.0.0.1:\(writer.port)/", count: count)
        } catch {
            writer.stop()
            throw error
        }
        let apply = try writer.cpuSeconds() - applyStart
        writer.stop()

        let server = try await ServeChild.start(arguments)
        defer { server.stop() }
        let before = try residentBytes(of: server)
        let anonymousBefore = try residentBytes(of: server, field: "RssAnon")
        let loadStart = try server.cpuSeconds()
        let scope = Scope(name: "bigscope")
        let board = BenchTileBoard()
        scope.root = board
        var clientOptions = ClientOptions()
        clientOptions.replyTimeout = replyTimeout(objects: count)
        // The fetch waits this long for the state's first part, which comes once the log is replayed.
        clientOptions.connectTimeout = replyTimeout(objects: count)
        let client = Client(url: "ws://127.0.0.1:\(server.port)/", options: clientOptions)
        let session = try await client.connect()
        try await session.fetch(scope)
        let load = try server.cpuSeconds() - loadStart
        let tiles = board.groups.flatMap(\.tiles)
        guard tiles.count == count, tiles.enumerated().allSatisfy({ $1.a == $0 && $1.b == 2 * $0 && $1.c == 3 * $0 }) else {
            throw SyncBenchError("store: the reloaded scope holds \(tiles.count) tiles, not the \(count) written")
        }
        await client.close()
        let after = try await settledResidentBytes(of: server)
        let anonymousAfter = try residentBytes(of: server, field: "RssAnon")

        let state = stateJSON(tiles: count)
        let parse = try Stopwatch.best(rounds: 3) {
            guard let parsed = try JSONSerialization.jsonObject(with: state) as? [String: Any],
                  (parsed["objects"] as? [String: Any])?.count == count else {
                throw SyncBenchError("store: the state's JSON did not parse back")
            }
        }
        let perObject = Double(max(0, after - before)) / Double(count)
        let anonymousPerObject = Double(max(0, anonymousAfter - anonymousBefore)) / Double(count)
        return [
            BenchFigure(name: "store.rss.\(label)", value: perObject, unit: "B/object", baseline: Double(state.count) / Double(count)),
            BenchFigure(name: "store.anon.\(label)", value: anonymousPerObject, unit: "B/object", baseline: Double(state.count) / Double(count)),
            BenchFigure(name: "store.load.\(label)", value: load, unit: "s", baseline: parse),
            BenchFigure(name: "store.apply.\(label)", value: apply, unit: "s", baseline: parse),
        ]
    }

    /// How long a client waits for a reply, or for the first part of a fetched state, about a scope
    /// of `objects` tiles: 30 s, or a second per 5,000 tiles when that is longer (200 s for a
    /// million, which a loaded machine needs).
    static func replyTimeout(objects: Int) -> Duration { .seconds(max(30, objects / 5_000)) }

    /// The state of a scope of `count` tiles as JSON text, in the shape of the server's state.
    static func stateJSON(tiles count: Int) -> Data {
        var objects: [String: Any] = [:]
        objects.reserveCapacity(count)
        for index in 0..<count {
            objects[UUID().uuidString.lowercased()] = ["clsName": "BenchTile", "properties": ["a": index, "b": 2 * index, "c": 3 * index]]
        }
        let state: [String: Any] = ["root": UUID().uuidString.lowercased(), "objects": objects]
        return (try? JSONSerialization.data(withJSONObject: state)) ?? Data()
    }

    /// The child's resident memory once two readings 200 ms apart agree within 1 % (at most 5 s):
    /// what it freed after the client left has been returned by then.
    static func settledResidentBytes(of child: ServeChild) async throws -> Int {
        var last = try residentBytes(of: child)
        for _ in 0..<25 {
            try await Task.sleep(for: .milliseconds(200))
            let now = try residentBytes(of: child)
            if abs(now - last) * 100 <= last { return now }
            last = now
        }
        return last
    }

    /// The child's `VmRSS`, or another field of its `/proc/PID/status` in kB (bytes).
    static func residentBytes(of child: ServeChild, field: String = "VmRSS") throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(child.process.processIdentifier)/status", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kB = Int(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else {
            throw SyncBenchError("store: no \(field) for the server")
        }
        return kB * 1024
    }
}
