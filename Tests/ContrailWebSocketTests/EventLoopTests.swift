import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

@Suite("EventLoop")
struct EventLoopTests {
    @Test("execute runs work on the loop thread, in order", arguments: [EventLoop.Backend.epoll, .poll])
    func executeRunsInOrder(backend: EventLoop.Backend) async throws {
        let loop = try EventLoop(name: "test", backend: backend)
        let seen = SanitizerVisibleMutex<[Int]>([])
        for index in 0..<100 {
            try loop.execute { seen.withLock { $0.append(index) } }
        }
        _ = try await loop.submit { 0 }
        #expect(seen.withLock { $0 } == Array(0..<100))
        await loop.stop()
    }

    @Test("timers follow the loop's clock: in deadline order once it reaches them, cancelled ones never")
    func timersInVirtualTime() async throws {
        let clock = TestClock()
        let loop = try EventLoop(name: "test", clock: clock)
        let fired = SanitizerVisibleMutex<[String]>([])
        try await loop.submit {
            loop.schedule(after: .milliseconds(30)) { fired.withLock { $0.append("late") } }
            loop.schedule(after: .milliseconds(1)) { fired.withLock { $0.append("early") } }
            let cancelled = loop.schedule(after: .milliseconds(5)) { fired.withLock { $0.append("cancelled") } }
            cancelled.cancel()
        }
        // One sleeper per live timer: the cancelled timer's sleeper is gone.
        #expect(await clock.waitForSleepers(2))
        #expect(clock.sleeperCount == 2)
        clock.advance(by: .milliseconds(1))
        try await withTimeout { while fired.withLock({ $0.isEmpty }) { await Task.yield() } }
        #expect(fired.withLock { $0 } == ["early"])
        // Up to a moment before the late deadline nothing more fires, however often the loop turns.
        clock.advance(by: .milliseconds(28))
        for _ in 0..<3 { _ = try await loop.submit { 0 } }
        #expect(fired.withLock { $0 } == ["early"])
        clock.advance(by: .milliseconds(1))
        try await withTimeout { while fired.withLock({ $0.count }) < 2 { await Task.yield() } }
        #expect(fired.withLock { $0 } == ["early", "late"])
        #expect(clock.sleeperCount == 0)
        await loop.stop()
    }

    @Test("a timer that fell due fires before work the loop thread queued after it fell due")
    func dueTimerFiresBeforeLaterQueuedWork() async throws {
        let clock = TestClock()
        let loop = try EventLoop(name: "test", clock: clock)
        let fired = SanitizerVisibleMutex<[String]>([])
        try await loop.submit { _ = loop.schedule(after: .milliseconds(10)) { fired.withLock { $0.append("timer") } } }
        // Not due yet (positive control): work queued from the loop thread runs with no timer before it.
        try await loop.submit { try? loop.enqueue { fired.withLock { $0.append("before due") } } }
        _ = try await loop.submit { 0 }
        #expect(fired.withLock { $0 } == ["before due"])
        // Due now: work that a task of the next pass queues from the loop thread (a task that prefers
        // the loop does so at every hop) runs after the timer, not in the same pass ahead of it.
        clock.advance(by: .milliseconds(10))
        try await loop.submit { try? loop.enqueue { fired.withLock { $0.append("queued after due") } } }
        try await withTimeout { while fired.withLock({ $0.count }) < 3 { await Task.yield() } }
        #expect(fired.withLock { $0 } == ["before due", "timer", "queued after due"])
        await loop.stop()
    }

    @Test("a timer on the continuous clock fires from the loop's own wait, in deadline order", arguments: [EventLoop.Backend.epoll, .poll])
    func timersOnContinuousClock(backend: EventLoop.Backend) async throws {
        let loop = try EventLoop(name: "test", backend: backend)
        let fired = SanitizerVisibleMutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            try? loop.execute {
                loop.schedule(after: .milliseconds(2)) {
                    fired.withLock { $0.append("second") }
                    done.resume()
                }
                loop.schedule(after: .zero) { fired.withLock { $0.append("first") } }
            }
        }
        #expect(fired.withLock { $0 } == ["first", "second"])
        await loop.stop()
    }

    @Test("work submitted after stop() is refused with EventLoopError.stopped and never runs")
    func refusesWorkAfterStop() async throws {
        let loop = try EventLoop(name: "test")
        let ran = SanitizerVisibleMutex<[String]>([])
        // Positive control: before the stop, work runs.
        try loop.execute { ran.withLock { $0.append("before") } }
        #expect(try await loop.submit { 7 } == 7)
        await loop.stop()
        #expect(throws: EventLoopError.stopped) { try loop.execute { ran.withLock { $0.append("execute") } } }
        await #expect(throws: EventLoopError.stopped) {
            try await loop.submit { ran.withLock { $0.append("submit") } }
        }
        #expect(throws: EventLoopError.stopped) { try loop.enqueue { ran.withLock { $0.append("enqueue") } } }
        #expect(ran.withLock { $0 } == ["before"])
        // Stopping again is harmless.
        await loop.stop()
    }

    @Test("work submitted while the loop is stopping still runs")
    func workDuringStopRuns() async throws {
        let loop = try EventLoop(name: "test")
        let ran = SanitizerVisibleMutex<[String]>([])
        // Work that hands itself back to the loop until stop() is under way, then submits once more.
        @Sendable func step() {
            if loop.lifecycleState == .stopping {
                do { try loop.execute { ran.withLock { $0.append("during stop") } } } catch { ran.withLock { $0.append("refused") } }
            } else {
                try? loop.execute(step)
            }
        }
        try loop.execute(step)
        await loop.stop()
        #expect(ran.withLock { $0 } == ["during stop"])
        #expect(loop.lifecycleState == .stopped)
    }

    @Test("a stopping loop closes what is still registered; its connections then refuse work with typed errors")
    func stopClosesRegisteredConnections() async throws {
        let loop = try EventLoop(name: "test")
        let server = TCPServer(eventLoop: loop)
        let port = try await server.start()
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: port, eventLoop: loop)
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        // Positive control: the connection works before the stop.
        try await client.send([1, 2, 3])
        #expect(try await withTimeout { try await receive(from: accepted) { $0.count >= 3 } } == [1, 2, 3])
        #expect(!client.isClosed)
        await loop.stop()
        #expect(client.isClosed)
        #expect(accepted.isClosed)
        await client.close()  // returns at once: the loop closed it
        await #expect(throws: NetworkError.closed("the TCP connection is closed")) { try await client.send([4]) }
        #expect(try await accepted.receive() == nil)
        await server.stop()
        await #expect(throws: NetworkError.closed("the event loop has stopped")) {
            _ = try await TCPConnection.connect(host: "127.0.0.1", port: port, eventLoop: loop)
        }
        var options = WebSocketOptions()
        options.eventLoop = loop
        await #expect(throws: WebSocketError.closed(nil, "the event loop has stopped")) {
            _ = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        }
    }

    @Test("the lifecycle table: every state and event, and the illegal ones")
    func lifecycleTable() {
        typealias L = EventLoopLifecycle
        let expected: [L.State: [L.Event: (L.State, L.Action)?]] = [
            .running: [.workSubmitted: (.running, .accept), .stopRequested: (.stopping, .wake),
                       .drainedEmpty: (.running, .keepRunning), .drainedWork: (.running, .keepRunning)],
            .stopping: [.workSubmitted: (.stopping, .accept), .stopRequested: (.stopping, .none),
                        .drainedEmpty: (.stopped, .exit), .drainedWork: (.stopping, .keepRunning)],
            .stopped: [.workSubmitted: (.stopped, .refuse), .stopRequested: (.stopped, .none),
                       .drainedEmpty: nil, .drainedWork: nil],
        ]
        for state in L.State.allCases {
            for event in L.Event.allCases {
                let got = L.transition(from: state, on: event)
                let want = expected[state]?[event] ?? nil
                #expect(got?.0 == want?.0 && got?.1 == want?.1, "\(state) on \(event)")
            }
        }
        // Through `handle`: running → stopping → stopped.
        var lifecycle = L()
        #expect(lifecycle.handle(.workSubmitted) == .accept)
        #expect(lifecycle.handle(.stopRequested) == .wake)
        #expect(lifecycle.handle(.drainedWork) == .keepRunning)
        #expect(lifecycle.state == .stopping)
        #expect(lifecycle.handle(.drainedEmpty) == .exit)
        #expect(lifecycle.state == .stopped)
        #expect(lifecycle.handle(.workSubmitted) == .refuse)
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
