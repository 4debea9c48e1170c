import Foundation
@testable import ContrailSupport
@testable import ContrailWebSocket

/// A started echo server on 127.0.0.1 (port 0): every message comes back on the same connection.
func startEchoServer(options: WebSocketOptions = .init(),
                     handshake: @escaping @Sendable (HTTPHead) -> HandshakeDecision = { _ in .accept })
    async throws -> (server: WebSocketServer, port: UInt16)
{
    let server = WebSocketServer(host: "127.0.0.1", port: 0, options: options, handshake: handshake)
    let port = try await server.start()
    Task {
        for await connection in server.connections {
            Task {
                do {
                    for try await message in connection.messages { try await connection.send(message) }
                } catch {}
            }
        }
    }
    return (server, port)
}

/// Reads from a raw TCP connection until `predicate` holds for everything read so far; nil at EOF first.
func receive(from connection: TCPConnection, until predicate: ([UInt8]) -> Bool) async throws -> [UInt8]? {
    var all: [UInt8] = []
    while !predicate(all) {
        guard let chunk = try await connection.receive() else { return nil }
        all += chunk
    }
    return all
}
