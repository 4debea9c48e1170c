import Contrail
import ContrailSupport
import Foundation

/// `contrail bench reconnect [--clients N]` (not in `all`: it restarts a server twice): how hard N
/// clients (default 1,000) come back to a server that restarts.
///
/// N `Client`s hold sessions on a `contrail serve` child; the child gets SIGTERM (a drain: every
/// session is closed with 4099) and a new one starts on the same port a second later. Every
/// connect attempt of every client is timestamped at its connector, from the SIGTERM until all N
/// are online again. The figure is the peak rate of attempts at the restarted server (the most in
/// any 100 ms after it listens, per second), with the default `ReconnectPolicy` (jittered backoff,
/// forgiven only after a healthy spell), against the same restart with jitter 0 (every client in
/// step) as the baseline: a ratio under 1 is the spread jitter buys.
enum ReconnectBench {
    /// Records the time of each connect attempt.
    final class Attempts: Sendable {
        private let times = SanitizerVisibleMutex<[ContinuousClock.Instant]>([])

        func record() { times.withLock { $0.append(.now) } }

        /// The attempts since `start`, and the most of them in any `window`.
        func peak(since start: ContinuousClock.Instant, window: Duration) -> (attempts: Int, peak: Int) {
            let sorted = times.withLock { $0 }.filter { $0 >= start }.sorted()
            var peak = 0
            var first = 0
            for (index, time) in sorted.enumerated() {
                while time - sorted[first] > window { first += 1 }
                peak = max(peak, index - first + 1)
            }
            return (sorted.count, peak)
        }
    }

    /// A WebSocket connector that timestamps every attempt.
    struct RecordingConnector: SyncConnector {
        let inner: WebSocketConnector
        let attempts: Attempts

        func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
            attempts.record()
            return try await inner.connect(headers: headers)
        }
    }

    /// One restart's outcome.
    struct Outcome {
        var peakPerSecond: Double
        var attempts: Int
        var secondsToRecover: Double
    }

    @MainActor
    static func run(_ options: BenchOptions, clients: Int) async throws -> [BenchFigure] {
        let count = options.smoke ? min(clients, 20) : clients
        try ConnectionsBench.raiseDescriptorLimit(to: 4 * count + 1024)
        let jittered = try await restart(clients: count, policy: ReconnectPolicy())
        let inStep = try await restart(clients: count, policy: ReconnectPolicy(jitter: 0))
        if !options.json {
            print("(reconnect: \(count) clients; jittered: \(jittered.attempts) attempts, all back in "
                  + "\(String(format: "%.1f", jittered.secondsToRecover)) s; in step: \(inStep.attempts) attempts, "
                  + "\(String(format: "%.1f", inStep.secondsToRecover)) s)")
        }
        return [
            BenchFigure(name: "reconnect.peak_attempts_per_s.n\(count)", value: jittered.peakPerSecond, unit: "1/s",
                        baseline: inStep.peakPerSecond),
            BenchFigure(name: "reconnect.seconds_to_recover.n\(count)", value: jittered.secondsToRecover, unit: "s",
                        baseline: inStep.secondsToRecover),
        ]
    }

    /// Connects `clients` clients with `policy`, restarts the server under them and measures their return.
    @MainActor
    private static func restart(clients count: Int, policy: ReconnectPolicy) async throws -> Outcome {
        let first = try await ServeChild.start([])
        let url = "ws://127.0.0.1:\(first.port)/"
        let attempts = Attempts()
        var options = ClientOptions()
        options.reconnect = policy
        options.connectTimeout = .seconds(120)
        let clients = (0..<count).map { _ in
            Client(connector: RecordingConnector(inner: WebSocketConnector(url: url), attempts: attempts), options: options)
        }
        let connects = clients.map { client in Task { @MainActor in _ = try await client.connect() } }
        for connect in connects { try await connect.value }
        let start = ContinuousClock.now
        // SIGTERM (a drain); the main actor, which the clients need meanwhile, never blocks on it.
        first.process.terminate()
        while first.process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .seconds(1))
        let second = try await ServeChild.start(["--port", "\(first.port)"])
        defer { second.stop() }
        let restarted = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(300)
        while clients.contains(where: { $0.status != .online }) {
            guard ContinuousClock.now < deadline else {
                throw SyncBenchError("\(clients.filter { $0.status != .online }.count) of \(count) clients did not come back")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let recovered = Stopwatch.seconds(ContinuousClock.now - start)
        let total = attempts.peak(since: start, window: .milliseconds(100)).attempts
        let peak = attempts.peak(since: restarted, window: .milliseconds(100)).peak
        guard total >= count else { throw SyncBenchError("only \(total) attempts for \(count) clients") }
        for client in clients { await client.close() }
        return Outcome(peakPerSecond: Double(peak) * 10, attempts: total, secondsToRecover: recovered)
    }
}
