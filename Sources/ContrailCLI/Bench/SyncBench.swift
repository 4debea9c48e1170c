import Contrail
import ContrailServer
import Foundation

/// `contrail bench sync`: end-to-end sync latency and server fan-out over real WebSockets on
/// loopback, with the clients and the server in this process.
///
/// - `sync.latency.p50/p99.cN`: from a change in client A to the observer firing in each of the
///   other N-1 clients (every receiver is a sample). Baseline: the WebSocket echo round trip of a
///   frame of the same size with N-1 connections echoing at the same time, measured in the same
///   run: the transport doing the same number of deliveries at once, without sync.
/// - `sync.fanout.c100`: fragments per second one server delivers to 99 clients, as a ratio to the
///   frames per second a bare WebSocket server pushes to 99 connections. The baseline pushes one
///   frame per change set; the server may coalesce what one burst delivers to a reader into one
///   frame (Protocol §1.2), which is part of what it is measured for. Every receiver's last value
///   is checked.
/// - `sync.presence.p50/p99.c100`: from a presence change in client A to the presence observer
///   firing in each of the other 99 clients (Protocol §8.20, the server's throttle raised to 1000
///   changes a second so that it does not set the pace). Baseline: `sync.latency` of the same
///   percentile with 100 clients, from the same run: a change set through the same clients and server.
@MainActor
enum SyncBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let echo = try await EchoServer.start()
        defer { Task { await echo.server.stop() } }
        var figures: [BenchFigure] = []
        for clients in [2, 100] {
            let rounds = clients == 2 ? options.iterations(1000, smoke: 5) : options.iterations(100, smoke: 2)
            let samples = try await latency(clients: clients, rounds: rounds, grants: options.grants)
            let connections = try await WebSocketBench.openWebSockets(clients - 1, port: echo.port, options: .init())
            let baseline = try await WebSocketBench.latencyWebSocket(connections, payload: Array(sampleFrame().utf8), trips: rounds)
            for connection in connections { await connection.close() }
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                figures.append(BenchFigure(name: "sync.latency.\(label).c\(clients)",
                                           value: Stopwatch.percentile(samples, p) * 1e6, unit: "us",
                                           baseline: Stopwatch.percentile(baseline, p) * 1e6))
            }
            guard clients == 100 else { continue }
            let presence = try await presenceLatency(clients: clients, rounds: rounds, grants: options.grants)
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                figures.append(BenchFigure(name: "sync.presence.\(label).c\(clients)",
                                           value: Stopwatch.percentile(presence, p) * 1e6, unit: "us",
                                           baseline: Stopwatch.percentile(samples, p) * 1e6))
            }
        }
        let changeSets = options.iterations(200, smoke: 3)
        let pushed = try await EchoServer.pushRate(receivers: 99, frames: changeSets, frame: sampleFrame())
        let fanout = try await fanout(clients: 100, changeSets: changeSets, grants: options.grants)
        figures.append(BenchFigure(name: "sync.fanout.c100", value: fanout, unit: "frag/s", baseline: pushed))
        return figures
    }

    /// A frame like the ones a one-fragment change set produces.
    static func sampleFrame() -> String {
        let fragment = SyncFragment(kind: .change, uuid: UUID(), className: "BenchBoard", properties: ["score": 1])
        return MessageFrame.encode([.scopeSync(ScopeSync(index: 1, scopeIndex: 0, fragments: [fragment]))], asArray: true)
    }

    // MARK: - Sync

    struct Replica {
        let client: Client
        let scope: Scope
        let board: BenchBoard
    }

    /// URL characters that need no percent-encoding (RFC 3986 §2.3).
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Clients of scope `name` on the server at `port`; `routed`: the URL carries `?scope=name`, as
    /// behind a load balancer routing by scope (README: Running a cluster).
    static func replicas(_ count: Int, port: UInt16, scope name: String = "bench", routed: Bool = false) async throws -> [Replica] {
        var options = ClientOptions()
        options.maxPendingMessages = 100_000
        var replicas: [Replica] = []
        for _ in 0..<count {
            let scope = Scope(name: name)
            let board = BenchBoard()
            scope.root = board
            let query = routed ? "?scope=" + (name.addingPercentEncoding(withAllowedCharacters: unreserved) ?? name) : ""
            let client = try await Client.sync(scope, url: "ws://127.0.0.1:\(port)/\(query)", options: options)
            replicas.append(Replica(client: client, scope: scope, board: board))
        }
        return replicas
    }

    static func makeServer(grants: Bool = false, presenceUpdatesPerSecond: Int = 10) throws -> ContrailServer {
        var options = ServerOptions()
        options.log = nil
        options.presenceUpdatesPerSecond = presenceUpdatesPerSecond
        if grants {
            // What a JWT with a dozen scope entries gives: the bench scope is matched by the last pattern.
            var entries: [String: ScopeAccess] = ["*-archive": .read, "public.*": .read, "be*h-never": .write]
            for number in 0..<8 { entries["team-\(number)-*"] = .write }
            entries["ben*"] = .write
            let identity = SessionIdentity(user: "bench", grants: ScopeGrants(entries), expiry: Date().addingTimeInterval(86_400))
            options.sessionHook = { _, _ in .allow(identity) }
        }
        return try ContrailServer(options: options)
    }

    /// Seconds from a change in the first client to each other client's observer firing.
    static func latency(clients: Int, rounds: Int, grants: Bool = false) async throws -> [Double] {
        let server = try makeServer(grants: grants)
        let replicas = try await replicas(clients, port: try await server.start())
        let arrivals = SyncArrivals()
        var tokens: [ObservationToken] = []
        for replica in replicas.dropFirst() {
            tokens.append(try replica.board.observeChange(arrivals, \BenchBoard.score) { arrivals.arrived() })
        }
        var samples: [Double] = []
        samples.reserveCapacity(rounds * (clients - 1))
        let sender = replicas[0].board
        for _ in 0..<rounds {
            arrivals.expect(clients - 1)
            sender.score += 1
            try await arrivals.wait(timeout: .seconds(30))
            samples.append(contentsOf: arrivals.latencies)
        }
        for token in tokens { token.cancel() }
        for replica in replicas { await replica.client.close() }
        await server.stop()
        return samples
    }

    /// Seconds from a presence change in the first client to each other client's presence observer
    /// firing (a first round, in which they join, is not counted).
    static func presenceLatency(clients: Int, rounds: Int, grants: Bool = false) async throws -> [Double] {
        let server = try makeServer(grants: grants, presenceUpdatesPerSecond: 1000)
        let replicas = try await replicas(clients, port: try await server.start())
        let arrivals = SyncArrivals()
        var tokens: [ObservationToken] = []
        for replica in replicas.dropFirst() {
            tokens.append(replica.scope.presence.onChange(arrivals) { _ in arrivals.arrived() })
        }
        let sender = replicas[0].scope.presence
        var samples: [Double] = []
        samples.reserveCapacity(rounds * (clients - 1))
        for round in 0...rounds {
            arrivals.expect(clients - 1)
            try sender.publish(["round": .int(Int64(round)), "cursor": [120, 48]])
            try await arrivals.wait(timeout: .seconds(30))
            if round > 0 { samples.append(contentsOf: arrivals.latencies) }
        }
        for token in tokens { token.cancel() }
        for replica in replicas { await replica.client.close() }
        await server.stop()
        return samples
    }

    /// Fragments per second the server delivers to `clients - 1` receivers of one sender.
    static func fanout(clients: Int, changeSets: Int, grants: Bool = false) async throws -> Double {
        let server = try makeServer(grants: grants)
        let replicas = try await replicas(clients, port: try await server.start())
        let rate = try await fanout(replicas, changeSets: changeSets)
        await server.stop()
        return rate
    }

    /// Fragments per second the first replica's change sets reach the others with (closes them all).
    static func fanout(_ replicas: [Replica], changeSets: Int) async throws -> Double {
        try await fanout(groups: [replicas], changeSets: changeSets)
    }

    /// Fragments per second that, in every group (one scope each), the first replica's change sets
    /// reach the others with, all groups sending at once (closes them all). O(changeSets × replicas).
    static func fanout(groups: [[Replica]], changeSets: Int) async throws -> Double {
        let done = SyncArrivals()
        var tokens: [ObservationToken] = []
        for group in groups {
            let target = group[0].board.score + changeSets
            for replica in group.dropFirst() {
                let board = replica.board
                tokens.append(try board.observeChangeImmediately(done, \BenchBoard.score) {
                    if board.score == target { done.arrived() }
                })
            }
        }
        let receivers = groups.reduce(0) { $0 + $1.count - 1 }
        done.expect(receivers)
        for _ in 0..<changeSets {
            for group in groups {
                group[0].board.score += 1
                group[0].scope.flush()
            }
        }
        try await done.wait(timeout: .seconds(60))
        let seconds = done.latencies.max() ?? 1
        for token in tokens { token.cancel() }
        for group in groups { for replica in group { await replica.client.close() } }
        return Double(changeSets * receivers) / seconds
    }
}

/// Counts observer callbacks of one round and the time each took since the round started.
@MainActor
final class SyncArrivals {
    private var expected = 0
    private var start = ContinuousClock.now
    private(set) var latencies: [Double] = []
    private var continuation: CheckedContinuation<Void, Never>?

    func expect(_ count: Int) {
        expected = count
        latencies.removeAll(keepingCapacity: true)
        start = .now
    }

    func arrived() {
        latencies.append(Stopwatch.seconds(ContinuousClock.now - start))
        if latencies.count >= expected, let continuation {
            self.continuation = nil
            continuation.resume()
        }
    }

    /// Returns once every expected arrival happened; throws after `timeout`.
    func wait(timeout: Duration) async throws {
        if latencies.count >= expected { return }
        let timer = Task { @MainActor [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled, let self, let continuation = self.continuation else { return }
            self.continuation = nil
            continuation.resume()
        }
        await withCheckedContinuation { continuation = $0 }
        timer.cancel()
        if latencies.count < expected {
            throw SyncBenchError("sync bench: only \(latencies.count) of \(expected) clients saw the change within \(timeout)")
        }
    }
}

/// The model the sync benchmark edits (in the benchmark's module, as app code would be).
final class BenchBoard: ModelObject {
    @Property var score = 0
    @Property var title = ""
}

/// A benchmark that could not finish.
struct SyncBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
