import Foundation
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

/// A bounded wait ran out.
struct TestTimeout: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "the awaited event did not happen within \(seconds) s" }
}

/// Runs `body` in the current task, cancelling it and failing with `TestTimeout` if it takes longer
/// than `seconds` (a bound on a wait, not a delay: a passing test never waits for it).
func withTimeout<T>(_ seconds: Double = 10, isolation: isolated (any Actor)? = #isolation,
                    _ body: () async throws -> T) async throws -> T {
    let fired = SanitizerVisibleMutex(false)
    let current = withUnsafeCurrentTask { TaskBox(task: $0) }
    let watchdog = Task.detached {
        guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
        fired.withLock { $0 = true }
        current.task?.cancel()
    }
    defer { watchdog.cancel() }
    do {
        let result = try await body()
        if fired.withLock({ $0 }) { throw TestTimeout(seconds: seconds) }
        return result
    } catch {
        if fired.withLock({ $0 }) { throw TestTimeout(seconds: seconds) }
        throw error
    }
}

/// Lets the watchdog cancel the task it guards (which outlives the watchdog: see `defer`).
private struct TaskBox: @unchecked Sendable {
    let task: UnsafeCurrentTask?
}

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
