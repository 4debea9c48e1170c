import ContrailWebSocket
import Foundation

/// `contrail bench websocket`: echo throughput and round-trip latency over loopback, each figure with a
/// plain TCP echo of the same bytes as its baseline, measured in the same run on the same event loop and
/// sockets (`TCPConnection`/`TCPServer`), so the ratio is the cost of WebSocket framing, masking and
/// validation.
///
/// Figures: `websocket.echo.<size>.c<connections>` for 16B, 1KiB (round trips/s) and 64KiB, 1MiB (MiB/s)
/// with 1 and 64 connections; `websocket.latency.p50|p99.c1|c64` (µs per round trip of a 16-byte message;
/// lower is better, so the target is a ratio ≤ 2).
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
        let tcpServer = TCPServer(host: "127.0.0.1", port: 0)
        let tcpPort = try await tcpServer.start()
        let echoTasks = [
            Task {
                await withDiscardingTaskGroup { group in
                    for await connection in wsServer.connections {
                        group.addTask {
                            do {
                                for try await message in connection.messages { try await connection.send(message) }
                            } catch {}
                        }
                    }
                }
            },
            Task {
                await withDiscardingTaskGroup { group in
                    for await connection in tcpServer.connections {
                        group.addTask {
                            do {
                                while let chunk = try await connection.receive() { try await connection.send(chunk) }
                            } catch {}
                            await connection.close()
                        }
                    }
                }
            },
        ]
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
            let tcp = try await openTCP(connections, port: tcpPort, loop: loop)
            for size in sizes {
                let totalBytes = size.perSecondUnit ? 0 : (connections == 1 ? 256 << 20 : 512 << 20)
                let full = size.perSecondUnit ? (connections == 1 ? 20_000 : 64_000) : max(4, totalBytes / size.bytes)
                let trips = max(1, options.iterations(full, smoke: connections) / connections)
                let payload = (0..<size.bytes).map { UInt8(truncatingIfNeeded: $0 &* 131) }
                let rounds = options.smoke ? 1 : 3
                let wsSeconds = try await bestSeconds(rounds) { try await echoWebSocket(ws, payload: payload, trips: trips) }
                let tcpSeconds = try await bestSeconds(rounds) { try await echoTCP(tcp, payload: payload, trips: trips) }
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
            let tcpSamples = try await latencyTCP(tcp, payload: payload, trips: trips)
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                figures.append(BenchFigure(
                    name: "websocket.latency.\(label).c\(connections)",
                    value: Stopwatch.percentile(wsSamples, p) * 1e6, unit: "us",
                    baseline: Stopwatch.percentile(tcpSamples, p) * 1e6))
            }
            for connection in ws { await connection.close() }
            for connection in tcp { await connection.close() }
        }
        await wsServer.stop()
        await tcpServer.stop()
        for task in echoTasks { task.cancel() }
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

    private static func openTCP(_ count: Int, port: UInt16, loop: EventLoop) async throws -> [TCPConnection] {
        var list: [TCPConnection] = []
        for _ in 0..<count {
            list.append(try await TCPConnection.connect(host: "127.0.0.1", port: port, eventLoop: loop))
        }
        return list
    }

    /// Every connection sends `trips` messages one after another, each after the previous echo arrived.
    private static func echoWebSocket(_ connections: [WebSocketConnection], payload: [UInt8], trips: Int) async throws {
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

    private static func echoTCP(_ connections: [TCPConnection], payload: [UInt8], trips: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    for _ in 0..<trips {
                        try await connection.send(payload)
                        var received = 0
                        while received < payload.count {
                            guard let chunk = try await connection.receive() else { throw BenchError.echoMismatch }
                            received += chunk.count
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

    private static func latencyTCP(_ connections: [TCPConnection], payload: [UInt8], trips: Int) async throws -> [Double] {
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for connection in connections {
                group.addTask {
                    var samples: [Double] = []
                    samples.reserveCapacity(trips)
                    for _ in 0..<trips {
                        let start = ContinuousClock.now
                        try await connection.send(payload)
                        var received = 0
                        while received < payload.count {
                            guard let chunk = try await connection.receive() else { throw BenchError.echoMismatch }
                            received += chunk.count
                        }
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
