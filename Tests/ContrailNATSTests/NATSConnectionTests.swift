import ContrailTestSupport
import Foundation
import Testing
import ContrailNATS
import ContrailWebSocket

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason),
       .oneAtATime, .timeLimit(.minutes(5)))
struct NATSConnectionTests {
    @Test func publishSubscribeWithHeaders() async throws {
        let server = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(server.url)
        defer { Task { await connection.close() } }
        #expect(await connection.serverInfo?.headers == true)
        let subscription = try await connection.subscribe("greet.*")
        try await connection.flush()
        try await connection.publish("greet.joe", payload: Array("hi".utf8), headers: NATSHeaders([("X-Id", "1")]))
        try await connection.publish("other", payload: Array("no".utf8))
        try await connection.publish("greet.ann", payload: Array("yo".utf8))
        let received = try await withTimeout(.seconds(10)) {
            var messages: [NATSMessage] = []
            for await message in subscription.messages {
                messages.append(message)
                if messages.count == 2 { break }
            }
            return messages
        }
        #expect(received.map(\.subject) == ["greet.joe", "greet.ann"])
        #expect(received[0].headers?["X-Id"] == "1")
        #expect(received[0].payload == Array("hi".utf8))
        #expect(received[1].headers == nil)
        await server.stop()
    }

    /// `echo: false` in CONNECT: a connection's own publishes skip its subscriptions, another
    /// connection's still arrive; with the default (`true`) its own arrive first (the control).
    @Test func echoOffSkipsOwnPublishes() async throws {
        let server = try await NATSServerProcess.start()
        let other = try await NATSConnection.connect(server.url)
        defer { Task { await other.close() } }
        for echo in [true, false] {
            var options = NATSOptions(servers: [server.url])
            options.echo = echo
            let connection = try await NATSConnection.connect(options)
            let subscription = try await connection.subscribe("wake.\(echo)")
            try await connection.flush()
            try await connection.publish("wake.\(echo)", payload: Array("own".utf8))
            try await connection.flush()  // the server has routed the own publish before the other's
            try await other.publish("wake.\(echo)", payload: Array("other".utf8))
            let first = try await withTimeout(.seconds(10)) {
                for await message in subscription.messages { return String(decoding: message.payload, as: UTF8.self) }
                return "none"
            }
            #expect(first == (echo ? "own" : "other"), "echo \(echo)")
            await connection.close()
        }
        await server.stop()
    }

    @Test func requestReplyAndNoResponders() async throws {
        let server = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(server.url)
        defer { Task { await connection.close() } }
        let service = try await connection.subscribe("echo")
        let responder = Task {
            for await message in service.messages {
                guard let reply = message.replyTo else { continue }
                try? await connection.publish(reply, payload: message.payload.reversed())
            }
        }
        defer { responder.cancel() }
        try await connection.flush()
        for index in 0..<20 {
            let reply = try await connection.request("echo", payload: Array("abc\(index)".utf8))
            #expect(reply.payload == Array("abc\(index)".utf8).reversed())
        }
        await #expect(throws: NATSError.noResponders(subject: "nobody.home")) {
            _ = try await connection.request("nobody.home", payload: [])
        }
        await #expect(throws: NATSError.self) { try await connection.publish("bad subject", payload: []) }
        await #expect(throws: NATSError.self) { try await connection.publish("wild.*", payload: []) }
        await server.stop()
    }

    @Test func payloadLimitIsTheServers() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("nats-\(UUID().uuidString).conf")
        try "max_payload: 1024\n".write(to: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: config) }
        let server = try await NATSServerProcess.start(extra: ["-c", config.path])
        let connection = try await NATSConnection.connect(server.url)
        defer { Task { await connection.close() } }
        await #expect(throws: NATSError.payloadTooBig(size: 2000, limit: 1024)) {
            try await connection.publish("a", payload: [UInt8](repeating: 1, count: 2000))
        }
        try await connection.publish("a", payload: [UInt8](repeating: 1, count: 1000))
        try await connection.flush()
        await server.stop()
    }

    @Test func connectFailsWithTypedErrorWhenNoServerListens() async throws {
        let port = try freePorts(1)[0]
        var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port)])
        options.connectTimeout = .seconds(2)
        await #expect(throws: NATSError.self) { _ = try await NATSConnection.connect(options) }
    }

    @Test func reconnectsAfterServerRestartAndRestoresSubscriptions() async throws {
        let first = try await NATSServerProcess.start()
        var options = NATSOptions(servers: [first.url])
        options.reconnectWait = .milliseconds(50)
        options.requestTimeout = .seconds(10)
        let connection = try await NATSConnection.connect(options)
        defer { Task { await connection.close() } }
        let subscription = try await connection.subscribe("after.restart")
        try await connection.flush()

        await first.kill()
        let second = try await first.restart()
        // flush waits for the reconnect (bounded by requestTimeout), then proves the link works.
        try await withTimeout(.seconds(20)) {
            while true {
                do throws(NATSError) {
                    try await connection.flush()
                    return
                } catch .disconnected {
                    continue
                }
            }
        }
        #expect(await connection.reconnectCount >= 1)
        try await connection.publish("after.restart", payload: Array("back".utf8))
        let message = try await withTimeout(.seconds(10)) { () -> NATSMessage? in
            for await message in subscription.messages { return message }
            return nil
        }
        #expect(message?.payload == Array("back".utf8))
        await second.stop()
    }

    @Test func failsOverToTheNextServer() async throws {
        let a = try await NATSServerProcess.start()
        let b = try await NATSServerProcess.start()
        var options = NATSOptions(servers: [a.url, b.url])
        options.reconnectWait = .milliseconds(50)
        let connection = try await NATSConnection.connect(options)
        defer { Task { await connection.close() } }
        #expect(await connection.status == .connected(a.url))
        await a.stop()
        try await withTimeout(.seconds(20)) {
            while await connection.status != .connected(b.url) {
                try? await connection.flush()
            }
        }
        try await connection.flush()
        #expect(await connection.status == .connected(b.url))
        await b.stop()
    }

    @Test func closeFailsLaterCalls() async throws {
        let server = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(server.url)
        let subscription = try await connection.subscribe("x")
        await connection.close()
        #expect(await connection.status == .closed)
        await #expect(throws: NATSError.closed) { try await connection.publish("x", payload: []) }
        // The subscription's stream finished.
        var count = 0
        for await _ in subscription.messages { count += 1 }
        #expect(count == 0)
        await server.stop()
    }
}

@Suite(.oneAtATime, .timeLimit(.minutes(5)))
struct NATSKeepAliveTests {
    /// A fake server that completes the handshake, then never answers again: the keep-alive ping
    /// goes unanswered, so the client drops the socket and starts reconnecting.
    @Test func unansweredPingDropsTheConnection() async throws {
        let server = TCPServer()
        let port = try await server.start()
        let silent = Task { () -> Int in
            var accepted = 0
            for await connection in server.connections {
                accepted += 1
                let info = #"{"server_id":"FAKE","version":"2.9.0","max_payload":1048576,"headers":true}"#
                try? await connection.send(Array("INFO \(info)\r\n".utf8))
                // Answer the handshake's PING once, then read and ignore everything.
                var answered = false
                while let bytes = try? await connection.receive() {
                    if !answered, String(decoding: bytes, as: UTF8.self).contains("PING\r\n") {
                        answered = true
                        try? await connection.send(Array("PONG\r\n".utf8))
                    }
                }
                if accepted == 2 { return accepted }
            }
            return accepted
        }
        var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port)])
        options.pingInterval = .milliseconds(200)
        options.reconnectWait = .milliseconds(50)
        let connection = try await NATSConnection.connect(options)
        #expect(await connection.status == .connected(options.servers[0]))
        // The dead link is noticed and replaced by a second connection to the (still silent) server.
        let accepted = try await withTimeout(.seconds(10)) { await silent.value }
        #expect(accepted == 2)
        await connection.close()
        await server.stop()
    }

    /// Positive control: with a real server the pings are answered and the connection stays.
    @Test(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason))
    func answeredPingsKeepTheConnection() async throws {
        let nats = try await NATSServerProcess.start()
        var options = NATSOptions(servers: [nats.url])
        options.pingInterval = .milliseconds(250)
        let connection = try await NATSConnection.connect(options)
        // Several ping intervals pass while the connection is in use: no ping goes unanswered.
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .milliseconds(1200) { try await connection.flush() }
        let subscription = try await connection.subscribe("tick")
        try await connection.publish("tick", payload: [1])
        _ = try await withTimeout(.seconds(60)) { for await _ in subscription.messages { break } }
        #expect(await connection.reconnectCount == 0)
        await connection.close()
        await nats.stop()
    }
}
