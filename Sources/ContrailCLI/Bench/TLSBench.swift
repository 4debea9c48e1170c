import ContrailWebSocket
import Foundation

/// `contrail bench tls`: what TLS costs on our own sockets, each figure next to plain WebSocket
/// measured in the same run over the same loopback, event loops and echo server code.
///
/// Figures: `tls.handshake` (µs per connect: TCP, TLS 1.3 handshake with verification, WebSocket
/// upgrade and close; baseline: the same without TLS) and `tls.handshake.cpu` (process CPU µs of it); `tls.echo.<size>.c<n>` for 1 KiB (round trips/s) and
/// 64 KiB (MiB/s) messages; `tls.cpu.<size>.c<n>` (process CPU µs per round trip, both ends being in
/// this process: the ratio is the CPU cost of TLS per message, target ≤ 1.3).
///
/// The certificate is the test CA's loopback certificate (`Tests/Fixtures/TLS`), embedded: its key is
/// public and only good for a benchmark on 127.0.0.1.
enum TLSBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let folder = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-tls-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = ["cert.pem": certificate, "key.pem": key, "ca.pem": authority]
        for (name, text) in files { try Data(text.utf8).write(to: folder.appending(path: name)) }
        let context = try TLSServerContext(certificateChainPath: folder.appending(path: "cert.pem").path,
                                           privateKeyPath: folder.appending(path: "key.pem").path)

        var serverOptions = WebSocketOptions()
        serverOptions.maxFrameSize = 64 << 20
        serverOptions.maxMessageSize = 64 << 20
        let plainServer = try await echoServer(serverOptions)
        serverOptions.serverTLS = context
        let tlsServer = try await echoServer(serverOptions)

        let loop = try EventLoop(name: "bench.tls.client")
        var clientOptions = WebSocketOptions()
        clientOptions.maxFrameSize = 64 << 20
        clientOptions.maxMessageSize = 64 << 20
        clientOptions.eventLoop = loop
        clientOptions.tls.caBundlePath = folder.appending(path: "ca.pem").path
        let plainURL = "ws://127.0.0.1:\(plainServer.port)/bench"
        let tlsURL = "wss://127.0.0.1:\(tlsServer.port)/bench"

        var figures: [BenchFigure] = []
        // Warm up (loads OpenSSL and the trust store once), then time sequential connects.
        await (try WebSocketConnection.connect(to: tlsURL, options: clientOptions)).close()
        let connects = options.iterations(300, smoke: 2)
        let tlsCPU = processCPUSeconds()
        let tlsConnect = try await connectSeconds(tlsURL, clientOptions, count: connects)
        let plainCPU = processCPUSeconds()
        let plainConnect = try await connectSeconds(plainURL, clientOptions, count: connects)
        let endCPU = processCPUSeconds()
        figures.append(BenchFigure(name: "tls.handshake", value: tlsConnect / Double(connects) * 1e6, unit: "us",
                                   baseline: plainConnect / Double(connects) * 1e6))
        figures.append(BenchFigure(name: "tls.handshake.cpu", value: (plainCPU - tlsCPU) / Double(connects) * 1e6, unit: "us",
                                   baseline: (endCPU - plainCPU) / Double(connects) * 1e6))

        for connections in [1, 16] {
            let plain = try await open(plainURL, clientOptions, connections)
            let secure = try await open(tlsURL, clientOptions, connections)
            for (name, bytes) in [("1KiB", 1024), ("64KiB", 64 * 1024)] {
                let full = bytes == 1024 ? 40_000 : 8_000
                let trips = max(1, options.iterations(full, smoke: connections) / connections)
                let payload = (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 131) }
                let rounds = options.smoke ? 1 : 3
                let tls = try await measure(secure, payload: payload, trips: trips, rounds: rounds)
                let base = try await measure(plain, payload: payload, trips: trips, rounds: rounds)
                let count = Double(trips * connections)
                if bytes == 1024 {
                    figures.append(BenchFigure(name: "tls.echo.\(name).c\(connections)", value: count / tls.seconds, unit: "rt/s",
                                               baseline: count / base.seconds))
                } else {
                    let mib = count * Double(bytes) / Double(1 << 20)
                    figures.append(BenchFigure(name: "tls.echo.\(name).c\(connections)", value: mib / tls.seconds, unit: "MiB/s",
                                               baseline: mib / base.seconds))
                }
                figures.append(BenchFigure(name: "tls.cpu.\(name).c\(connections)", value: tls.cpu / count * 1e6, unit: "us/rt",
                                           baseline: base.cpu / count * 1e6))
            }
            for connection in plain + secure { await connection.close() }
        }
        await plainServer.server.stop()
        await tlsServer.server.stop()
        await loop.stop()
        return figures
    }

    /// An echo server with `options`, serving until stopped.
    private static func echoServer(_ options: WebSocketOptions) async throws -> (server: WebSocketServer, port: UInt16) {
        let server = WebSocketServer(host: "127.0.0.1", port: 0, options: options)
        let port = try await server.start()
        Task {
            await withDiscardingTaskGroup { group in
                for await connection in server.connections {
                    group.addTask {
                        do {
                            for try await message in connection.messages { try await connection.send(message) }
                        } catch {}
                    }
                }
            }
        }
        return (server, port)
    }

    private static func open(_ url: String, _ options: WebSocketOptions, _ count: Int) async throws -> [WebSocketConnection] {
        var list: [WebSocketConnection] = []
        for _ in 0..<count { list.append(try await WebSocketConnection.connect(to: url, options: options)) }
        return list
    }

    private static func connectSeconds(_ url: String, _ options: WebSocketOptions, count: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count {
            let connection = try await WebSocketConnection.connect(to: url, options: options)
            await connection.close()
        }
        return Stopwatch.seconds(ContinuousClock.now - start)
    }

    /// The best of `rounds` runs of `trips` echoes on every connection: wall seconds and the process's
    /// CPU seconds of that run.
    private static func measure(_ connections: [WebSocketConnection], payload: [UInt8], trips: Int, rounds: Int) async throws
        -> (seconds: Double, cpu: Double)
    {
        var best = (seconds: Double.infinity, cpu: Double.infinity)
        for _ in 0..<rounds {
            let cpuStart = processCPUSeconds()
            let start = ContinuousClock.now
            try await WebSocketBench.echoWebSocket(connections, payload: payload, trips: trips)
            let seconds = Stopwatch.seconds(ContinuousClock.now - start)
            let cpu = processCPUSeconds() - cpuStart
            if seconds < best.seconds { best.seconds = seconds }
            if cpu < best.cpu { best.cpu = cpu }
        }
        return best
    }

    /// CPU time of the whole process (every thread), in seconds.
    private static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    // Tests/Fixtures/TLS/server.pem, server-key.pem and ca.pem (made by its generate.sh).
    private static let certificate = """
    -----BEGIN CERTIFICATE-----
    MIIBxjCCAWygAwIBAgICEAEwCgYIKoZIzj0EAwIwGzEZMBcGA1UEAwwQQ29udHJh
    aWwgVGVzdCBDQTAgFw0wMDAxMDEwMDAwMDBaGA8yOTk5MTIzMTAwMDAwMFowFDES
    MBAGA1UEAwwJbG9jYWxob3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEtQKg
    hOS3mZMrBCdCuSz1S8L8ICRqMxYJQo0EDxt+Q9pw0Nu8PctraK2XRHWVHeg6tLsg
    VzjbskYy4R3cR9L2z6OBpDCBoTAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIH
    gDATBgNVHSUEDDAKBggrBgEFBQcDATAfBgNVHSMEGDAWgBQ6RFP2GHq6TF6E8/dw
    6pckJ3Fg5DAsBgNVHREEJTAjgglsb2NhbGhvc3SHBH8AAAGHEAAAAAAAAAAAAAAA
    AAAAAAEwHQYDVR0OBBYEFAE/6GdaCus1O0BSuN5fqnulW2k/MAoGCCqGSM49BAMC
    A0gAMEUCIBsI3RoTnJWqfdsvDyd9+nZKnoNJcqUHJBlUy6hxNw+wAiEA5Haf/S/x
    CUUYz7tNAjFQ29ET8WWiaYwah/ZR0LmNHYM=
    -----END CERTIFICATE-----
    """
    private static let key = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwpPSMBPtkw5mX6Xo
    EoHFBssAOd/R+23L8IhZSGL7HFWhRANCAAS1AqCE5LeZkysEJ0K5LPVLwvwgJGoz
    FglCjQQPG35D2nDQ27w9y2torZdEdZUd6Dq0uyBXONuyRjLhHdxH0vbP
    -----END PRIVATE KEY-----
    """
    private static let authority = """
    -----BEGIN CERTIFICATE-----
    MIIBaTCCARCgAwIBAgICEAAwCgYIKoZIzj0EAwIwGzEZMBcGA1UEAwwQQ29udHJh
    aWwgVGVzdCBDQTAgFw0wMDAxMDEwMDAwMDBaGA8yOTk5MTIzMTAwMDAwMFowGzEZ
    MBcGA1UEAwwQQ29udHJhaWwgVGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEH
    A0IABPQqVri91aknLSdODMw7fHc3PXHfLtAfsrSHbv/ZZARczZQUEaavvYn50p26
    B0q5guJDdccThsWGREREuXRrOCujQjBAMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0P
    AQH/BAQDAgEGMB0GA1UdDgQWBBQ6RFP2GHq6TF6E8/dw6pckJ3Fg5DAKBggqhkjO
    PQQDAgNHADBEAiBDyCwzAi8BfxRPxA6W006hTdIImQAz/t595E5PrxDL8gIgHiDy
    OQEmuF/7Hn6ztzW8bpdR0UVWjBqdjb0etA/pqJg=
    -----END CERTIFICATE-----
    """
}
