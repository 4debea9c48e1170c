import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

@Suite("WebSocket client")
struct WebSocketClientTests {
    @Test("echo of text and binary messages")
    func echo() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/echo?x=1")
        #expect(client.path == "/echo?x=1")
        try await withTimeout {
            var messages = client.messages.makeAsyncIterator()
            try await client.send(.text("hello, wörld"))
            #expect(try await messages.next() == .text("hello, wörld"))
            try await client.send(.binary([0, 1, 2, 255]))
            #expect(try await messages.next() == .binary([0, 1, 2, 255]))
            try await client.send(.text(""))
            #expect(try await messages.next() == .text(""))
        }
        await client.close()
        #expect(client.closeCode == .normal)
        await server.stop()
    }

    @Test("large messages (16-bit and 64-bit lengths) arrive intact", arguments: [70_000, 3_000_000])
    func largeMessages(size: Int) async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let text = String(repeating: "é", count: size / 2)
        try await withTimeout {
            var messages = client.messages.makeAsyncIterator()
            try await client.send(.binary(payload))
            #expect(try await messages.next() == .binary(payload))
            try await client.send(.text(text))
            #expect(try await messages.next() == .text(text))
        }
        await client.close()
        await server.stop()
    }

    @Test("connection refused is a typed error")
    func refused() async throws {
        // Bind a port, then close it: nothing listens there afterwards.
        let probe = TCPServer()
        let port = try await probe.start()
        await probe.stop()
        await #expect(throws: WebSocketError.connectionRefused(host: "127.0.0.1", port: port)) {
            _ = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        }
    }

    @Test("an unknown host is a typed error")
    func unknownHost() async throws {
        var options = WebSocketOptions()
        options.connectTimeout = .seconds(5)
        do {
            _ = try await WebSocketConnection.connect(to: "ws://no-such-host.invalid/", options: options)
            Issue.record("connected to a host that does not exist")
        } catch {
            switch error {
            case .unknownHost(let host): #expect(host == "no-such-host.invalid")
            case .timedOut: break  // a resolver without network may time out instead
            default: Issue.record("unexpected error \(error)")
            }
        }
    }

    @Test("schemes other than ws and wss are refused with a clear error")
    func unsupportedScheme() async throws {
        await #expect(throws: WebSocketError.unsupportedScheme("https")) {
            _ = try await WebSocketConnection.connect(to: "https://127.0.0.1/")
        }
    }

    @Test("a rejected handshake gives handshakeFailed with the status line")
    func rejected() async throws {
        let (server, port) = try await startEchoServer { request in
            request.value(for: "Authorization") == "Bearer good" ? .accept : .reject(status: 403, reason: "Forbidden")
        }
        await #expect(throws: WebSocketError.handshakeFailed(status: "HTTP/1.1 403 Forbidden")) {
            _ = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        }
        var options = WebSocketOptions()
        options.headers = [("Authorization", "Bearer good")]
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        await client.close()
        await server.stop()
    }

    @Test("a server that never answers the handshake times the client out, when the loop's clock says so")
    func handshakeTimeout() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        let silent = TCPServer()
        let port = try await silent.start()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.handshakeTimeout = .milliseconds(200)
        let settings = options
        let attempt = Task { () async throws(WebSocketError) -> WebSocketConnection in
            try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: settings)
        }
        // The request has arrived, so the client's handshake timer is armed (it is armed before the
        // request is written).
        var incoming = silent.connections.makeAsyncIterator()
        let raw = try #require(await incoming.next())
        _ = try await withTimeout { try await receive(from: raw) { $0.withUnsafeBytes { Handshake.headEnd(in: $0) } != nil } }
        #expect(await clock.waitForSleepers(1))
        // A moment before the deadline nothing happens; at the deadline the configured timer fires.
        try await advance(clock, by: .milliseconds(199), on: loop)
        #expect(clock.sleeperCount == 1, "the handshake timer still waits")
        try await advance(clock, by: .milliseconds(1), on: loop)
        do {
            _ = try await withTimeout { try await attempt.value }
            Issue.record("the handshake succeeded against a silent server")
        } catch let error as WebSocketError {
            guard case .timedOut(let reason) = error else { Issue.record("unexpected error \(error)"); return }
            // The configured timer fired, not the 10 s default.
            #expect(reason.contains("\(Duration.milliseconds(200))"))
        }
        await raw.close()
        await silent.stop()
        await loop.stop()
    }

    @Test("subprotocols and extra headers reach the server")
    func subprotocols() async throws {
        var serverOptions = WebSocketOptions()
        serverOptions.subprotocols = ["contrail.v2", "contrail.v1"]
        let (server, port) = try await startEchoServer(options: serverOptions)
        var options = WebSocketOptions()
        options.subprotocols = ["contrail.v1", "other"]
        options.headers = [("X-Session", "abc")]
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        #expect(client.subprotocol == "contrail.v1")
        await client.close()
        await server.stop()
    }
}

@Suite("WebSocket messages consumer")
struct WebSocketConsumerTests {
    @Test("a second concurrent consumer of messages gets concurrentConsumer at once; the first keeps its messages")
    func secondConsumerIsRefused() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        let first = Task {
            var messages = client.messages.makeAsyncIterator()
            return try await messages.next()
        }
        try await withTimeout { while !client.inbound.hasWaiter { await Task.yield() } }
        // The first consumer is parked: a second one fails at once instead of replacing it.
        var second = client.messages.makeAsyncIterator()
        let refused: Bool
        do {
            _ = try await second.next()
            refused = false
        } catch WebSocketError.concurrentConsumer {
            refused = true
        }
        #expect(refused)
        try await client.send(.text("for the first"))
        #expect(try await withTimeout { try await first.value } == .text("for the first"))
        await client.close()
        await server.stop()
    }
}

@Suite("WebSocket receive")
struct WebSocketReceiveTests {
    @Test("receive() yields messages in order, refuses a second waiting consumer, and ends with nil after a normal close")
    func receiveInOrderThenNil() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        try await client.send(.text("one"))
        try await client.send(.binary([2]))
        try await withTimeout {
            let one = try await client.receive()
            let two = try await client.receive()
            #expect(one == .text("one"))
            #expect(two == .binary([2]))
        }
        let first = Task { try await client.receive() }
        try await withTimeout { while !client.inbound.hasWaiter { await Task.yield() } }
        await #expect(throws: WebSocketError.concurrentConsumer) { try await client.receive() }
        try await client.send(.text("three"))
        #expect(try await withTimeout { try await first.value } == .text("three"))
        // Positive control for the end: after this side's close, receive() ends with nil (no error).
        await client.close()
        let end = try await withTimeout { try await client.receive() }
        #expect(end == nil)
        await server.stop()
    }
}

@Suite("WebSocket loop handler")
struct WebSocketLoopHandlerTests {
    @Test("a loop handler echoes every message in order, including those that arrived before it was set")
    func loopHandlerEchoes() async throws {
        let server = WebSocketServer(host: "127.0.0.1", port: 0)
        let port = try await server.start()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        try await client.send(.text("early"))
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        // "early" waits in the queue before the handler takes over.
        try await withTimeout { while accepted.inbound.queuedCount == 0 { await Task.yield() } }
        let seen = SanitizerVisibleMutex(0)
        accepted.setLoopHandler { [weak accepted] message in
            #expect(accepted?.loop.isOnLoop == true)
            seen.withLock { $0 += 1 }
            try? accepted?.sendWithoutWaiting(message)
        }
        var echoes = client.messages.makeAsyncIterator()
        #expect(try await withTimeout { try await echoes.next() } == .text("early"))
        for index in 0..<200 { try await client.send(.binary([UInt8(index % 256), 1, 2, 3])) }
        for index in 0..<200 {
            #expect(try await withTimeout { try await echoes.next() } == .binary([UInt8(index % 256), 1, 2, 3]))
        }
        #expect(seen.withLock { $0 } == 201)
        await client.close()
        await server.stop()
    }

    @Test("a loop handler echoes large and small text and binary messages, interleaved, intact and in order")
    func loopHandlerEchoesMixedSizes() async throws {
        var options = WebSocketOptions()
        options.maxFrameSize = 4 << 20
        options.maxMessageSize = 4 << 20
        // Its own loop, so megabytes of debug-build work do not hold up other tests' timers on the shared loops.
        let loop = try EventLoop(name: "mixed-sizes")
        options.eventLoop = loop
        let server = WebSocketServer(host: "127.0.0.1", port: 0, options: options)
        let port = try await server.start()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        // Large echoes are written by reference, gathered with the small frames around them.
        accepted.setLoopHandler { [weak accepted] message in try? accepted?.sendWithoutWaiting(message) }
        let sizes = [10, 20_000, 3, 300_000, 16_384, 600_000, 70_000, 0, 16_383]
        let messages: [WebSocketMessage] = (0..<27).map { index in
            let size = sizes[index % sizes.count]
            if index % 2 == 0 {
                let unit = Array("\(index)é🎉-".utf8)
                return .text(String(decoding: (0..<size).map { unit[$0 % unit.count] }, as: UTF8.self))
            }
            return .binary((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
        }
        try await withTimeout(30) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for message in messages { try await client.send(message) } }
                var echoes = client.messages.makeAsyncIterator()
                for (index, message) in messages.enumerated() {
                    let echo = try await echoes.next()
                    #expect(echo == message, "message \(index) of \(message.byteCount) bytes")
                }
                try await group.waitForAll()
            }
        }
        await client.close()
        #expect(client.closeCode == .normal)
        await server.stop()
        await loop.stop()
    }
}
