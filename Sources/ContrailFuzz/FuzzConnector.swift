import Contrail
import ContrailWebSocket

/// A connector that forwards to the current server (which a restart replaces) and that the fuzzer
/// can cut: every open transport closes and connects fail until `restore()`.
///
/// `@unchecked Sendable` is not needed: all state sits in a `SanitizerVisibleMutex`.
final class FuzzConnector: SyncConnector {
    private struct State {
        var target: (any SyncConnector)?
        var isCut = false
        var open: [any SyncTransport] = []
    }

    private let state: SanitizerVisibleMutex<State>
    private let name: String

    init(_ target: any SyncConnector, name: String) {
        state = SanitizerVisibleMutex(State(target: target))
        self.name = name
    }

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        guard let target = state.withLock({ $0.isCut ? nil : $0.target }) else {
            throw .transport("cut by the fuzzer")
        }
        var transport = try await target.connect(headers: headers)
        if TracingTransport.isEnabled { transport = TracingTransport(transport, name: name) }
        let keep = state.withLock { state -> Bool in
            guard !state.isCut else { return false }
            state.open.removeAll { $0 === transport }
            state.open.append(transport)
            return true
        }
        if !keep {
            await transport.close(code: 1001, reason: "cut by the fuzzer")
            throw .transport("cut by the fuzzer")
        }
        return transport
    }

    /// Points new connections at another server (after a restart).
    func route(to target: (any SyncConnector)?) { state.withLock { $0.target = target } }

    /// Closes every open transport; connects fail until `restore()`.
    func cut() async {
        let open = state.withLock { state -> [any SyncTransport] in
            state.isCut = true
            defer { state.open.removeAll() }
            return state.open
        }
        for transport in open { await transport.close(code: 1001, reason: "cut by the fuzzer") }
    }

    func restore() { state.withLock { $0.isCut = false } }
}
