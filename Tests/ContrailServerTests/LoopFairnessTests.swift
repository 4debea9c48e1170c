import Contrail
import ContrailServer
import ContrailWebSocket
import Dispatch
import Foundation
import Synchronization
import ContrailTestSupport
import Testing

/// A server whose connections all share one event loop, where one connection's app hook takes a
/// long time (and holds the thread it runs on if that is the loop's): another client still
/// completes its opening handshake, creates its session and fetches, because the hooks run off the
/// loop (``ServerConnection`` establishes a session, and fetches, in `OffLoopExecutor`, on the pool).
/// On the shape where a connection's task ran on its loop from the start, the second client's
/// opening handshake timed out behind the hook.
@Suite("A slow hook holds no other connection back")
struct LoopFairnessTests {
    /// Holds the callers of ``hold(on:)`` until ``open()``, and says whether one is held. A caller on
    /// one of the server's event loop threads is held with its thread (as a hook doing blocking I/O or
    /// long computation there would hold the loop), at most 120 s so that a failing test ends; any
    /// other caller waits without holding a thread, so that a passing test holds none of the
    /// cooperative pool's few threads while the rest of the suite runs beside it.
    final class Gate: Sendable {
        private struct State {
            var holding = 0
            var isOpen = false
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let semaphore = DispatchSemaphore(value: 0)
        private let state = Mutex(State())

        /// Returns once the gate is open.
        func hold(on group: EventLoopGroup) async {
            state.withLock { $0.holding += 1 }
            if group.loops.contains(where: { $0.isOnLoop }) {
                holdThread()
            } else {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let open = state.withLock { state -> Bool in
                        if !state.isOpen { state.waiting.append(continuation) }
                        return state.isOpen
                    }
                    if open { continuation.resume() }
                }
            }
            state.withLock { $0.holding -= 1 }
        }

        private func holdThread() {
            _ = semaphore.wait(timeout: .now() + 120)
        }

        /// Whether a caller is held now.
        var isHolding: Bool { state.withLock { $0.holding > 0 } }

        /// Lets every held caller go, and any later one through.
        func open() {
            let waiting = state.withLock { state in
                state.isOpen = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
            for _ in 0..<4 { semaphore.signal() }
        }
    }

    /// A server in memory on one event loop of its own, with `configure` applied.
    private func server(_ configure: (inout ServerOptions, EventLoopGroup) -> Void) async throws -> (ContrailServer, EventLoopGroup, UInt16) {
        let group = try EventLoopGroup(count: 1, name: "test.server")
        var options = Wire.options()
        options.eventLoopGroup = group
        configure(&options, group)
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

    /// Waits (bounded) until `gate` holds a caller.
    private func waitUntilHolding(_ gate: Gate) async throws {
        let holding = await eventually(.seconds(120)) { gate.isHolding }
        try #require(holding, "the hook was called")
    }

    @Test func aHandshakeCompletesWhileAnotherConnectionsHookTakesLong() async throws {
        let gate = Gate()
        defer { gate.open() }
        let (server, group, port) = try await server { options, loops in
            options.connectionHook = { headers in
                if headers.contains(where: { $0.0.lowercased() == "x-test-slow" }) { await gate.hold(on: loops) }
                return true
            }
        }
        // The slow connection's hook is held; its client waits for the upgrade's answer.
        let slow = Task { try await connect(port, headers: [("x-test-slow", "1")]) }
        try await waitUntilHolding(gate)
        // Another client on the same server loop: handshake, session and fetch, all while the hook holds.
        let quick = try await connect(port)
        try await quick.createSession()
        _ = try await quick.fetch("S", index: 1)
        #expect(gate.isHolding, "the quick client went through while the hook was still held")
        // The slow one goes on once its hook returns.
        gate.open()
        let slowClient = try await slow.value
        try await slowClient.createSession()
        await server.stop()
        await group.stop()
    }

    @Test func aSessionIsCreatedWhileAnotherSessionsFetchHookTakesLong() async throws {
        let gate = Gate()
        defer { gate.open() }
        let (server, group, port) = try await server { options, loops in
            options.fetchHook = { name, _, _ in
                if name == "Slow" { await gate.hold(on: loops) }
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
        #expect(gate.isHolding, "the quick client went through while the fetch hook was still held")
        gate.open()
        // Positive control: the held fetch is answered once its hook returns.
        let reply = try await slow.next(timeout: .seconds(120))
        #expect(reply["type"] == "ScopeFetchReply" && reply["replyTo"] == 1, "\(reply)")
        await server.stop()
        await group.stop()
    }
}
