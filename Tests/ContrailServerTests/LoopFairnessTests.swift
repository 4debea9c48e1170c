import Contrail
import ContrailServer
import ContrailWebSocket
import Dispatch
import Foundation
import Synchronization
import ContrailTestSupport
import Testing

/// A server whose connections all share one event loop, where one connection's app hook holds the
/// thread it runs on (as a hook doing blocking I/O or long computation would): another client still
/// completes its opening handshake, creates its session and fetches, because the hooks run off the
/// loop (``ServerConnection`` establishes a session, and fetches, in `OffLoopExecutor`, on the pool).
/// On the shape where a connection's task ran on its loop from the start, the second client's
/// opening handshake timed out behind the hook. One test at a time: each holds a thread of the
/// cooperative pool (two on two cores) while its second client connects.
@Suite("A slow hook holds no other connection back", .serialized)
struct LoopFairnessTests {
    /// Holds the threads that call ``hold()`` until ``open()`` (or a bound, so that a failing test
    /// does not hold a thread for ever), and says whether one is held.
    final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        private let held = Atomic<Int>(0)

        /// Blocks the calling thread until ``open()``, at most 120 s.
        func hold() {
            held.add(1, ordering: .sequentiallyConsistent)
            _ = semaphore.wait(timeout: .now() + 120)
            held.subtract(1, ordering: .sequentiallyConsistent)
        }

        /// Whether a thread is held now.
        var isHolding: Bool { held.load(ordering: .sequentiallyConsistent) > 0 }

        /// Lets every held thread go, and the next one through.
        func open() {
            for _ in 0..<4 { semaphore.signal() }
        }
    }

    /// A server in memory on one event loop of its own, with `configure` applied.
    private func server(_ configure: (inout ServerOptions) -> Void) async throws -> (ContrailServer, EventLoopGroup, UInt16) {
        let group = try EventLoopGroup(count: 1, name: "test.server")
        var options = Wire.options()
        options.eventLoopGroup = group
        configure(&options)
        let server = try ContrailServer(options: options)
        return (server, group, try await server.start())
    }

    /// A WebSocket client whose opening handshake may take a minute (the machine may be busy).
    private func connect(_ port: UInt16, headers: [(String, String)] = []) async throws -> ServerTestClient {
        var options = WebSocketOptions()
        options.handshakeTimeout = .seconds(60)
        let transport = try await WebSocketConnector(url: "ws://127.0.0.1:\(port)/", options: options).connect(headers: headers)
        return ServerTestClient(transport: transport)
    }

    /// Waits (bounded) until `gate` holds a thread.
    private func waitUntilHolding(_ gate: Gate) async throws {
        let holding = await eventually(.seconds(120)) { gate.isHolding }
        try #require(holding, "the hook was called")
    }

    @Test func aHandshakeCompletesWhileAnotherConnectionsHookHoldsItsThread() async throws {
        let gate = Gate()
        defer { gate.open() }
        let (server, group, port) = try await server { options in
            options.connectionHook = { headers in
                if headers.contains(where: { $0.0.lowercased() == "x-test-slow" }) { gate.hold() }
                return true
            }
        }
        // The slow connection's hook holds its thread; its client waits for the upgrade's answer.
        let slow = Task { try await connect(port, headers: [("x-test-slow", "1")]) }
        try await waitUntilHolding(gate)
        // Another client on the same server loop: handshake, session and fetch, all while the hook holds.
        let quick = try await connect(port)
        try await quick.createSession()
        _ = try await quick.fetch("S", index: 1)
        #expect(gate.isHolding, "the quick client went through while the hook still held its thread")
        // The slow one goes on once its hook returns.
        gate.open()
        let slowClient = try await slow.value
        try await slowClient.createSession()
        await server.stop()
        await group.stop()
    }

    @Test func aSessionIsCreatedWhileAnotherSessionsFetchHookHoldsItsThread() async throws {
        let gate = Gate()
        defer { gate.open() }
        let (server, group, port) = try await server { options in
            options.fetchHook = { name, _, _ in
                if name == "Slow" { gate.hold() }
                return nil
            }
        }
        let slow = try await connect(port)
        try await slow.createSession()
        try await slow.send(["type": "ScopeFetch", "index": 1, "name": "Slow", "params": [:]])
        try await waitUntilHolding(gate)
        let quick = try await connect(port)
        try await quick.createSession()
        _ = try await quick.fetch("S", index: 1)
        #expect(gate.isHolding, "the quick client went through while the fetch hook still held its thread")
        gate.open()
        // Positive control: the held fetch is answered once its hook returns.
        let reply = try await slow.next(timeout: .seconds(120))
        #expect(reply["type"] == "ScopeFetchReply" && reply["replyTo"] == 1, "\(reply)")
        await server.stop()
        await group.stop()
    }
}
