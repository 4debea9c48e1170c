import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

@Suite("WebSocket server")
struct WebSocketServerTests {
    @Test("port 0 picks a free port and the hook sees path and headers")
    func hookSeesRequest() async throws {
        let seen = SanitizerVisibleMutex<(String?, String?)>((nil, nil))
        let server = WebSocketServer(port: 0) { request in
            seen.withLock { $0 = (request.path, request.value(for: "x-session")) }
            return .acceptWith(headers: [("X-Server", "contrail")])
        }
        let port = try await server.start()
        #expect(port != 0)
        var options = WebSocketOptions()
        options.headers = [("X-Session", "token-1")]
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/sync?scope=1", options: options)
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        #expect(accepted.path == "/sync?scope=1")
        #expect(accepted.requestHeaders?.value(for: "X-Session") == "token-1")
        #expect(seen.withLock { $0.0 } == "/sync?scope=1")
        #expect(seen.withLock { $0.1 } == "token-1")
        await client.close()
        await server.stop()
    }

    @Test("a client that sends half a handshake and stalls is dropped when the server's clock says so")
    func halfHandshakeTimesOut() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.handshakeTimeout = .milliseconds(200)
        let (server, port) = try await startEchoServer(options: options)
        let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        try await raw.send(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n".utf8))
        // Accepted: its handshake timer is armed (before the server counts the connection).
        try await withTimeout { while server.connectionCount != 1 { await Task.yield() } }
        #expect(await clock.waitForSleepers(1))
        // Positive control: a moment before the deadline the connection is still there.
        try await advance(clock, by: .milliseconds(199), on: loop)
        #expect(server.connectionCount == 1)
        try await advance(clock, by: .milliseconds(1), on: loop)
        // Closed in that loop pass; the server forgets it right after closing its socket.
        #expect(server.connectionCount == 0)
        // The server closed the connection: receive() then reports the end of the stream, or a
        // reset when the close overtakes bytes still in flight (either way the peer is dropped).
        let dropped = try await withTimeout { () -> Bool in
            do { return try await receive(from: raw) { _ in false } == nil } catch { return true }
        }
        #expect(dropped)
        await raw.close()
        await server.stop()
        await loop.stop()
    }

    @Test("a plain HTTP responder is bound by its own timeout, not the handshake's: past it the client gets 503")
    func slowResponderGets503AfterItsOwnTimeout() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.handshakeTimeout = .milliseconds(200)
        options.httpResponseTimeout = .seconds(1)
        options.httpResponder = { _ in
            startedContinuation.yield()
            for await _ in release {}
            return HTTPResponse(status: 200, contentType: "text/plain", body: Array("late\n".utf8))
        }
        let (server, port) = try await startEchoServer(options: options)
        let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        try await raw.send(Array("GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        // Past the handshake timeout the request waits on its responder, not on the client: still open.
        try await advance(clock, by: .milliseconds(500), on: loop)
        #expect(server.connectionCount == 1)
        try await advance(clock, by: .milliseconds(500), on: loop)
        var answer: [UInt8] = []
        try await withTimeout { while let chunk = try await raw.receive() { answer += chunk } }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 503 Service Unavailable"))
        releaseContinuation.finish()
        await raw.close()
        await server.stop()
        await loop.stop()
    }

    @Test("a body gate answers from the head, before the body is read; letting it through reads the body")
    func bodyGateAnswersBeforeTheBody() async throws {
        var options = WebSocketOptions()
        options.handshakeTimeout = .seconds(60)
        options.httpBodyGate = { request in
            request.value(for: "Authorization") == "yes" ? nil : .error(status: 401, reason: "Unauthorized")
        }
        options.httpResponder = { request in
            HTTPResponse(contentType: "text/plain", body: Array("got \(request.body.count)\n".utf8))
        }
        let (server, port) = try await startEchoServer(options: options, realTime: true)
        func exchange(_ bytes: String) async throws -> String {
            let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
            try await raw.send(Array(bytes.utf8))
            var all: [UInt8] = []
            try await withTimeout(30) { while let chunk = try await raw.receive() { all += chunk } }
            await raw.close()
            return String(decoding: all, as: UTF8.self)
        }
        // 5,000 bytes announced, none sent: answered at once (reading the body would wait 60 s for it).
        let refused = try await exchange("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n")
        #expect(refused.hasPrefix("HTTP/1.1 401 Unauthorized"), "\(refused.prefix(80))")
        // Positive control: through the gate, the whole body reaches the responder.
        let body = String(repeating: "b", count: 5_000)
        let answered = try await exchange("POST /x HTTP/1.1\r\nHost: h\r\nAuthorization: yes\r\nContent-Length: 5000\r\n\r\n\(body)")
        #expect(answered.hasPrefix("HTTP/1.1 200") && answered.hasSuffix("got 5000\n"), "\(answered.prefix(80))")
        await server.stop()
    }

    @Test("a malformed request gets 400 and is closed")
    func malformedRequest() async throws {
        let (server, port) = try await startEchoServer()
        let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        try await raw.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        var all: [UInt8] = []
        try await withTimeout {
            while let chunk = try await raw.receive() { all += chunk }
        }
        #expect(String(decoding: all, as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        await raw.close()
        await server.stop()
    }

    @Test("200 concurrent connections echo")
    func manyConnections() async throws {
        let (server, port) = try await startEchoServer()
        try await withTimeout(20) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/\(index)")
                        var messages = client.messages.makeAsyncIterator()
                        for round in 0..<3 {
                            try await client.send(.text("\(index)-\(round)"))
                            #expect(try await messages.next() == .text("\(index)-\(round)"))
                        }
                        await client.close()
                    }
                }
                try await group.waitForAll()
            }
        }
        await server.stop()
    }

    @Test("stop closes open connections with going away")
    func stopClosesConnections() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        try await client.send(.text("ping"))
        var messages = client.messages.makeAsyncIterator()
        #expect(try await messages.next() == .text("ping"))
        try await withTimeout { await server.stop() }
        let end = try await withTimeout { try await messages.next() }
        #expect(end == nil)
        #expect(client.closeCode == .goingAway)
    }
}
