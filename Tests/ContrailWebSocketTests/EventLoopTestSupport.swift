import Foundation
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

/// Loops whose clock never moves: a server on them never times a client out, however slowly a loaded
/// machine (or ThreadSanitizer) runs the test. Tests of the timeouts themselves move a clock of their own.
let frozenClockLoops: EventLoopGroup = {
    do {
        return try EventLoopGroup(count: 2, name: "test.frozen", clock: TestClock())
    } catch {
        fatalError("cannot start the tests' event loops: \(error)")
    }
}()

/// A started echo server on 127.0.0.1 (port 0): every message comes back on the same connection. Unless
/// `options` name a loop or a group, or `realTime` is set, it runs on `frozenClockLoops`.
func startEchoServer(options: WebSocketOptions = .init(), realTime: Bool = false,
                     handshake: @escaping @Sendable (HTTPHead) -> HandshakeDecision = { _ in .accept })
    async throws -> (server: WebSocketServer, port: UInt16)
{
    var options = options
    if !realTime && options.eventLoop == nil && options.eventLoopGroup == nil { options.eventLoopGroup = frozenClockLoops }
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

/// A loop whose timers follow a virtual clock, for tests of timeouts and keep-alives in virtual time.
func makeVirtualTimeLoop(_ name: String = "test.virtual") throws -> (loop: EventLoop, clock: TestClock) {
    let clock = TestClock()
    return (try EventLoop(name: name, clock: clock), clock)
}

/// Moves `clock` on by `duration` and returns once `loop` has fired every timer that became due: a loop
/// pass that starts after the advance runs them, whether or not their sleeper tasks have woken it yet.
func advance(_ clock: TestClock, by duration: Duration, on loop: EventLoop) async throws {
    clock.advance(by: duration)
    // The first task runs in some pass; that pass fires the due timers after its tasks, before the
    // loop takes the second task.
    _ = try await loop.submit { 0 }
    _ = try await loop.submit { 0 }
}
