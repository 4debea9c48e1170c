import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket

@Suite("EventLoop")
struct EventLoopTests {
    @Test("execute runs work on the loop thread, in order", arguments: [EventLoop.Backend.epoll, .poll])
    func executeRunsInOrder(backend: EventLoop.Backend) async throws {
        let loop = try EventLoop(name: "test", backend: backend)
        let seen = SanitizerVisibleMutex<[Int]>([])
        for index in 0..<100 {
            loop.execute { seen.withLock { $0.append(index) } }
        }
        _ = await loop.submit { 0 }
        #expect(seen.withLock { $0 } == Array(0..<100))
        await loop.stop()
    }

    @Test("timers fire in deadline order and cancelled ones do not fire")
    func timers() async throws {
        let loop = try EventLoop(name: "test")
        let fired = SanitizerVisibleMutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.enqueue {
                loop.schedule(after: .milliseconds(30)) {
                    fired.withLock { $0.append("late") }
                    done.resume()
                }
                loop.schedule(after: .milliseconds(1)) { fired.withLock { $0.append("early") } }
                let cancelled = loop.schedule(after: .milliseconds(5)) { fired.withLock { $0.append("cancelled") } }
                cancelled.cancel()
            }
        }
        #expect(fired.withLock { $0 } == ["early", "late"])
        await loop.stop()
    }

    @Test("plain TCP echo through the loop on both backends", arguments: [EventLoop.Backend.epoll, .poll])
    func tcpEcho(backend: EventLoop.Backend) async throws {
        let loop = try EventLoop(name: "test", backend: backend)
        let server = TCPServer(eventLoop: loop)
        let port = try await server.start()
        #expect(port != 0)
        Task {
            for await connection in server.connections {
                Task {
                    while let chunk = try await connection.receive() { try await connection.send(chunk) }
                    await connection.close()
                }
            }
        }
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: port, eventLoop: loop)
        let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let echoed = try await withTimeout {
            async let sent: Void = client.send(payload)
            let received = try await receive(from: client) { $0.count >= payload.count }
            try await sent
            return received
        }
        #expect(echoed == payload)
        await client.close()
        await server.stop()
        await loop.stop()
    }

    @Test("a TCP receive whose task is cancelled ends with nil, not an error")
    func tcpReceiveEndsWithNilWhenCancelled() async throws {
        let server = TCPServer()
        let port = try await server.start()
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        try await accepted.send([1, 2, 3])
        // Positive control: a receive with bytes waiting returns them.
        let first = try await withTimeout { try await receive(from: client) { $0.count >= 3 } }
        #expect(first == [1, 2, 3])
        let reader = Task { () async throws(NetworkError) -> [UInt8]? in try await client.receive() }
        reader.cancel()
        let result = try await withTimeout { try await reader.value }
        #expect(result == nil)
        await accepted.close()
        await client.close()
        await server.stop()
    }

    @Test("IPv6 loopback works when the machine has it")
    func ipv6() async throws {
        let server = TCPServer(host: "::1")
        guard let port = try? await server.start() else { return }  // no IPv6 on this machine
        let client = try await TCPConnection.connect(host: "::1", port: port)
        var iterator = server.connections.makeAsyncIterator()
        let accepted = try #require(await iterator.next())
        try await client.send([1, 2, 3])
        let got = try await withTimeout { try await receive(from: accepted) { $0.count >= 3 } }
        #expect(got == [1, 2, 3])
        await client.close()
        await accepted.close()
        await server.stop()
    }
}
