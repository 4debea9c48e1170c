import ContrailWebSocket
import Foundation

/// `contrail bench websocket`: echo throughput and round-trip latency over loopback. The baseline of
/// every figure is `PlainTCPEcho`, measured in the same run: the same round trips of the same sizes over
/// plain TCP, written directly against sockets and epoll (one server thread, one client thread), sharing
/// no code with the WebSocket stack. The ratio is therefore the whole cost of Contrail's WebSocket client
/// and server (event loops, Swift concurrency, framing, masking, validation) over the kernel's own cost.
///
/// Figures: `websocket.echo.<size>.c<connections>` for 16B, 1KiB (round trips/s) and 64KiB, 1MiB (MiB/s)
/// with 1 and 64 connections; `websocket.latency.p50|p99.c1|c64` (µs per round trip of a 16-byte message;
/// lower is better).
enum WebSocketBench {
    private struct Size {
        var name: String
        var bytes: Int
        var perSecondUnit: Bool
    }

    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let loop = try EventLoop(name: "bench.client")
        var wsOptions = WebSocketOptions()
        wsOptions.maxFrameSize = 64 << 20
        wsOptions.maxMessageSize = 64 << 20
        let wsServer = WebSocketServer(host: "127.0.0.1", port: 0, options: wsOptions)
        let wsPort = try await wsServer.start()
        let echoTask = Task {
                await withDiscardingTaskGroup { group in
                    for await connection in wsServer.connections {
                        group.addTask {
                            do {
                                for try await message in connection.messages { try await connection.send(message) }
                            } catch {}
                        }
                    }
                }
        }
        var clientOptions = wsOptions
        clientOptions.eventLoop = loop

        var figures: [BenchFigure] = []
        let sizes = [
            Size(name: "16B", bytes: 16, perSecondUnit: true),
            Size(name: "1KiB", bytes: 1024, perSecondUnit: true),
            Size(name: "64KiB", bytes: 64 * 1024, perSecondUnit: false),
            Size(name: "1MiB", bytes: 1 << 20, perSecondUnit: false),
        ]
        for connections in [1, 64] {
            let ws = try await openWebSockets(connections, port: wsPort, options: clientOptions)
            for size in sizes {
                let totalBytes = size.perSecondUnit ? 0 : (connections == 1 ? 256 << 20 : 512 << 20)
                let full = size.perSecondUnit ? (connections == 1 ? 20_000 : 64_000) : max(4, totalBytes / size.bytes)
                let trips = max(1, options.iterations(full, smoke: connections) / connections)
                let payload = (0..<size.bytes).map { UInt8(truncatingIfNeeded: $0 &* 131) }
                let rounds = options.smoke ? 1 : 3
                let wsSeconds = try await bestSeconds(rounds) { try await echoWebSocket(ws, payload: payload, trips: trips) }
                let tcpSeconds = try await bestSeconds(rounds) {
                    _ = try await PlainTCPEcho.run(connections: connections, size: size.bytes, trips: trips, recordSamples: false)
                }
                let count = Double(trips * connections)
                let name = "websocket.echo.\(size.name).c\(connections)"
                if size.perSecondUnit {
                    figures.append(BenchFigure(name: name, value: count / wsSeconds, unit: "rt/s",
                                               baseline: count / tcpSeconds))
                } else {
                    let mib = count * Double(size.bytes) / Double(1 << 20)
                    figures.append(BenchFigure(name: name, value: mib / wsSeconds, unit: "MiB/s",
                                               baseline: mib / tcpSeconds))
                }
            }
            // Latency: every round trip of a 16-byte message timed on its own.
            let trips = max(2, options.iterations(connections == 1 ? 20_000 : 64_000, smoke: connections) / connections)
            let payload = [UInt8](repeating: 0x42, count: 16)
            let wsSamples = try await latencyWebSocket(ws, payload: payload, trips: trips)
            let tcpSamples = try await PlainTCPEcho.run(connections: connections, size: payload.count, trips: trips,
                                                        recordSamples: true).samples
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                figures.append(BenchFigure(
                    name: "websocket.latency.\(label).c\(connections)",
                    value: Stopwatch.percentile(wsSamples, p) * 1e6, unit: "us",
                    baseline: Stopwatch.percentile(tcpSamples, p) * 1e6))
            }
            for connection in ws { await connection.close() }
        }
        await wsServer.stop()
        echoTask.cancel()
        await loop.stop()
        return figures
    }

    private static func bestSeconds(_ rounds: Int, _ body: () async throws -> Void) async throws -> Double {
        var best = Double.infinity
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            try await body()
            best = min(best, Stopwatch.seconds(ContinuousClock.now - start))
        }
        return best
    }

    static func openWebSockets(_ count: Int, port: UInt16, options: WebSocketOptions) async throws
        -> [WebSocketConnection]
    {
        var list: [WebSocketConnection] = []
        for _ in 0..<count {
            list.append(try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/bench", options: options))
        }
        return list
    }

    /// Every connection sends `trips` messages one after another, each after the previous echo arrived.
    static func echoWebSocket(_ connections: [WebSocketConnection], payload: [UInt8], trips: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    var messages = connection.messages.makeAsyncIterator()
                    let message = WebSocketMessage.binary(payload)
                    for _ in 0..<trips {
                        try await connection.send(message)
                        guard let echo = try await messages.next(), echo.byteCount == payload.count else {
                            throw BenchError.echoMismatch
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func latencyWebSocket(_ connections: [WebSocketConnection], payload: [UInt8], trips: Int) async throws
        -> [Double]
    {
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for connection in connections {
                group.addTask {
                    var samples: [Double] = []
                    samples.reserveCapacity(trips)
                    var messages = connection.messages.makeAsyncIterator()
                    for _ in 0..<trips {
                        let start = ContinuousClock.now
                        try await connection.send(.binary(payload))
                        guard try await messages.next() != nil else { throw BenchError.echoMismatch }
                        samples.append(Stopwatch.seconds(ContinuousClock.now - start))
                    }
                    return samples
                }
            }
            var all: [Double] = []
            for try await samples in group { all += samples }
            return all
        }
    }

    /// The echo did not come back as sent.
    enum BenchError: Error, CustomStringConvertible {
        case echoMismatch
        var description: String { "websocket bench: an echo was lost or truncated" }
    }
}
