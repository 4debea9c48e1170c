import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation

/// `contrail bench durability`: acknowledged change sets per second on a server persisting to a
/// data directory, with 1, 10 and 100 concurrent writers (each its own session, all on one scope,
/// each sending its next change set when the previous one is acknowledged).
///
/// - `durability.acks.wN`: with the default policy (a change set is acknowledged only once its
///   record is synced; group commit). Baseline: the same writers against the OS-buffered policy
///   (`--fsync interval:200ms`), measured in the same run.
///
/// Every run checks that the scope ends with each writer's last value.
enum DurabilityBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        for (writers, changeSets) in [(1, 300), (10, 100), (100, 20)] {
            let perWriter = options.smoke ? 2 : changeSets
            let buffered = try await rate(writers: writers, changeSets: perWriter, fsync: .interval(.milliseconds(200)))
            let durable = try await rate(writers: writers, changeSets: perWriter, fsync: .everyRecord)
            figures.append(BenchFigure(name: "durability.acks.w\(writers)", value: durable, unit: "acks/s", baseline: buffered))
        }
        return figures
    }

    /// Acknowledged change sets per second for `writers` writers sending `changeSets` each.
    static func rate(writers: Int, changeSets: Int, fsync: FsyncPolicy) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        var serverOptions = ServerOptions()
        serverOptions.log = nil
        serverOptions.dataDirectory = directory
        serverOptions.fsync = fsync
        let server = try ContrailServer(options: serverOptions)
        var sessions: [(RawSession, String)] = []
        for _ in 0..<writers {
            let session = RawSession(try await server.connector().connect(headers: []))
            sessions.append((session, try await session.open(scope: "bench")))
        }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (writer, (session, root)) in sessions.enumerated() {
                group.addTask {
                    for n in 1...changeSets {
                        let fragment = SyncFragment(kind: .change, uuid: UUID(wireString: root)!, className: "BenchRoot",
                                                    properties: ["w\(writer)": .int(Int64(n))])
                        let sync = ScopeSync(index: n + 1, scopeIndex: 0, fragments: [fragment])
                        let reply = try await session.request(MessageFrame.encode([.scopeSync(sync)], asArray: false), replyType: "ScopeSyncReply")
                        guard reply["fragmentReplies"] == [[:]] else { throw DurabilityBenchError.rejected("\(reply)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = Stopwatch.seconds(ContinuousClock.now - start)
        let root = await server.state(ofScope: "bench")?["objects"]?[sessions[0].1]?["properties"]
        for writer in 0..<writers where root?["w\(writer)"] != .int(Int64(changeSets)) {
            throw DurabilityBenchError.rejected("writer \(writer) ended at \(String(describing: root?["w\(writer)"])), not \(changeSets)")
        }
        for (session, _) in sessions { await session.transport.close(code: 1000, reason: "") }
        await server.stop()
        return Double(writers * changeSets) / elapsed
    }
}

/// A bare protocol session over a transport: one request at a time, reading frames until the
/// reply of the expected type (broadcasts from the other writers are skipped).
private final class RawSession: @unchecked Sendable {
    // `@unchecked Sendable` invariant: one task at a time uses it (its writer's loop).
    let transport: any SyncTransport
    private var iterator: TypedAsyncStream<String, TransportClosed>.Iterator
    private var buffered: [JSON] = []

    init(_ transport: any SyncTransport) {
        self.transport = transport
        iterator = transport.frames.makeAsyncIterator()
    }

    /// Creates a session and fetches `scope`; returns its root UUID.
    func open(scope: String) async throws -> String {
        _ = try await request(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#, replyType: "SessionCreateReply")
        try await transport.send(#"{"type":"ScopeFetch","index":1,"name":"\#(scope)","params":{}}"#)
        let state = try await next(type: "ScopeState")
        guard let root = state["rootUUID"]?.stringValue else { throw DurabilityBenchError.rejected("no root in \(state)") }
        return root
    }

    func request(_ frame: String, replyType: String) async throws -> JSON {
        try await transport.send(frame)
        return try await next(type: replyType)
    }

    private func next(type: String) async throws -> JSON {
        while true {
            while buffered.isEmpty {
                guard let frame = try await iterator.next() else { throw DurabilityBenchError.rejected("the server closed the session") }
                let json = try JSON(parsing: frame)
                buffered = json.arrayValue ?? [json]
            }
            let message = buffered.removeFirst()
            if message["type"]?.stringValue == type { return message }
        }
    }
}

/// Why the durability bench could not measure.
private enum DurabilityBenchError: Error, CustomStringConvertible {
    case rejected(String)
    var description: String {
        switch self { case .rejected(let detail): return "durability bench: \(detail)" }
    }
}
