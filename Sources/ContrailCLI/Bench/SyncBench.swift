import Contrail
import ContrailServer
import Foundation

/// `contrail bench sync`: end-to-end sync latency and server fan-out, with clients and an embedded
/// server in this process.
///
/// - `sync.latency.p50/p99.c2/c100`: from a change in client A to the observer firing in the other
///   clients (every receiver is a sample), as a ratio to the transport's echo round trip measured
///   in the same run. The transport is the in-memory one until the WebSocket module is merged
///   into the sync branch.
/// - `sync.fanout.c100`: fragments per second one server delivers to 100 clients, as a ratio to
///   the frames per second one transport carries.
@MainActor
enum SyncBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let echo = try await echoRoundTrip(samples: options.iterations(2000, smoke: 20))
        var figures: [BenchFigure] = []
        for clients in [2, 100] {
            let rounds = clients == 2 ? options.iterations(1000, smoke: 5) : options.iterations(100, smoke: 2)
            let samples = try await latency(clients: clients, rounds: rounds)
            figures.append(BenchFigure(name: "sync.latency.p50.c\(clients)", value: Stopwatch.percentile(samples, 0.5) * 1e6,
                                       unit: "us", baseline: echo * 1e6))
            figures.append(BenchFigure(name: "sync.latency.p99.c\(clients)", value: Stopwatch.percentile(samples, 0.99) * 1e6,
                                       unit: "us", baseline: echo * 1e6))
        }
        let carried = try await transportThroughput(frames: options.iterations(20_000, smoke: 200))
        let fanout = try await fanout(clients: 100, changeSets: options.iterations(200, smoke: 3))
        figures.append(BenchFigure(name: "sync.fanout.c100", value: fanout, unit: "frag/s", baseline: carried))
        return figures
    }

    // MARK: - Baselines

    /// Median round trip of a sync-sized frame through an echoing transport pair, in seconds.
    static func echoRoundTrip(samples count: Int) async throws -> Double {
        let (client, server) = InMemoryTransport.pair()
        let echo = Task.detached {
            for try await frame in server.frames { try await server.send(frame) }
        }
        defer { echo.cancel() }
        let frame = sampleFrame()
        var iterator = client.frames.makeAsyncIterator()
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = ContinuousClock.now
            try await client.send(frame)
            guard try await iterator.next() != nil else { throw SyncBenchError("echo transport ended") }
            samples.append(Stopwatch.seconds(ContinuousClock.now - start))
        }
        await client.close(code: 1000, reason: "")
        return Stopwatch.percentile(samples, 0.5)
    }

    /// Frames per second one transport carries one way.
    static func transportThroughput(frames count: Int) async throws -> Double {
        let (client, server) = InMemoryTransport.pair()
        let frame = sampleFrame()
        let start = ContinuousClock.now
        let reader = Task.detached { () -> Int in
            var received = 0
            for try await _ in server.frames {
                received += 1
                if received == count { break }
            }
            return received
        }
        for _ in 0..<count { try await client.send(frame) }
        _ = try await reader.value
        let seconds = Stopwatch.seconds(ContinuousClock.now - start)
        await client.close(code: 1000, reason: "")
        return Double(count) / seconds
    }

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

    static func replicas(_ count: Int, server: ContrailServer) async throws -> [Replica] {
        var options = ClientOptions()
        options.maxPendingMessages = 100_000
        var replicas: [Replica] = []
        for _ in 0..<count {
            let scope = Scope(name: "bench")
            let board = BenchBoard()
            scope.root = board
            let client = try await Client.sync(scope, connector: server.connector(), options: options)
            replicas.append(Replica(client: client, scope: scope, board: board))
        }
        return replicas
    }

    static func makeServer() throws -> ContrailServer {
        var options = ServerOptions()
        options.log = nil
        return try ContrailServer(options: options)
    }

    /// Seconds from a change in the first client to each other client's observer firing.
    static func latency(clients: Int, rounds: Int) async throws -> [Double] {
        let server = try makeServer()
        let replicas = try await replicas(clients, server: server)
        let arrivals = SyncArrivals()
        var tokens: [ObservationToken] = []
        for replica in replicas.dropFirst() {
            tokens.append(replica.board.observeChange(arrivals, \BenchBoard.score) { arrivals.arrived() })
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

    /// Fragments per second the server delivers to `clients - 1` receivers of one sender.
    static func fanout(clients: Int, changeSets: Int) async throws -> Double {
        let server = try makeServer()
        let replicas = try await replicas(clients, server: server)
        let target = replicas[0].board.score + changeSets
        let done = SyncArrivals()
        var tokens: [ObservationToken] = []
        for replica in replicas.dropFirst() {
            let board = replica.board
            tokens.append(board.observeChangeImmediately(done, \BenchBoard.score) {
                if board.score == target { done.arrived() }
            })
        }
        done.expect(clients - 1)
        let sender = replicas[0]
        for _ in 0..<changeSets {
            sender.board.score += 1
            sender.scope.flush()
        }
        try await done.wait(timeout: .seconds(60))
        let seconds = done.latencies.max() ?? 1
        for token in tokens { token.cancel() }
        for replica in replicas { await replica.client.close() }
        await server.stop()
        return Double(changeSets * (clients - 1)) / seconds
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
