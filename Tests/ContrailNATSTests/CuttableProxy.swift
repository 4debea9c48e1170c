import ContrailWebSocket
import Synchronization

/// A loopback TCP proxy a test can cut: forwards each accepted connection to `target`; `cut()`
/// closes every open pair and refuses new connections until `restore()`.
final class CuttableProxy: Sendable {
    private let server = TCPServer()
    private let state = Mutex<(cut: Bool, open: [TCPConnection])>((false, []))
    /// The port clients connect to.
    let port: UInt16

    init(target: UInt16) async throws {
        port = try await server.start()
        Task { [self] in
            for await inbound in server.connections {
                guard !state.withLock({ $0.cut }),
                      let outbound = try? await TCPConnection.connect(host: "127.0.0.1", port: target) else {
                    await inbound.close()
                    continue
                }
                state.withLock { $0.open += [inbound, outbound] }
                Task { await Self.pump(inbound, to: outbound) }
                Task { await Self.pump(outbound, to: inbound) }
            }
        }
    }

    private static func pump(_ source: TCPConnection, to sink: TCPConnection) async {
        while let bytes = try? await source.receive() {
            do { try await sink.send(bytes) } catch { break }
        }
        await source.close()
        await sink.close()
    }

    /// Closes every forwarded connection and refuses new ones.
    func cut() async {
        let open = state.withLock { state -> [TCPConnection] in
            state.cut = true
            defer { state.open = [] }
            return state.open
        }
        for connection in open { await connection.close() }
    }

    /// Forwards new connections again.
    func restore() {
        state.withLock { $0.cut = false }
    }

    /// Cuts and stops listening.
    func stop() async {
        await cut()
        await server.stop()
    }
}
