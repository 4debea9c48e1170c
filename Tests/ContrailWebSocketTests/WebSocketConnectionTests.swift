import ContrailTestSupport
import Foundation
import Synchronization
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket
import ContrailTestSupport

/// A client connected to a raw TCP peer that answered the WebSocket handshake correctly and then
/// does only what the test says: the client, the peer's server and connection, and whatever the
/// peer read after the handshake request.
private func connectToRawPeer(options: WebSocketOptions) async throws
    -> (client: WebSocketConnection, peerServer: TCPServer, raw: TCPConnection, leftover: [UInt8])
{
    let peerServer = TCPServer(readHighWater: 64 * 1024)
    let port = try await peerServer.start()
    async let connecting = WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
    var incoming = peerServer.connections.makeAsyncIterator()
    let raw = try #require(await incoming.next())
    let leftover = try await acceptHandshake(on: raw)
    return (try await connecting, peerServer, raw, leftover)
}

/// Reads a handshake request from `raw` and answers it with 101.
private func acceptHandshake(on raw: TCPConnection) async throws -> [UInt8] {
    var all: [UInt8] = []
    var end: Int?
    while end == nil {
        guard let chunk = try await raw.receive() else { throw WebSocketError.closed(nil, "peer left") }
        all += chunk
        end = all.withUnsafeBytes { Handshake.headEnd(in: $0) }
    }
    let request = try Handshake.parseRequest(Array(all[..<end!]))
    try await raw.send(Handshake.response(for: request, subprotocol: nil, extraHeaders: []))
    return Array(all[end!...])
}

@Suite("WebSocket connection")
struct WebSocketConnectionTests {
    @Test("client-initiated close carries code and reason to the server")
    func clientCloses() async throws {
        let server = WebSocketServer()
        let port = try await server.start()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        await client.close(code: CloseCode(4001), reason: "bye")
        // The server's messages end with the peer's (non-normal) close code.
        do {
            for try await _ in accepted.messages {}
            Issue.record("expected the server's messages to throw")
        } catch {
            #expect(error == .closed(CloseCode(4001), "bye"))
        }
        #expect(accepted.closeCode == CloseCode(4001))
        #expect(accepted.closeReason == "bye")
        #expect(client.closeCode == CloseCode(4001))  // the server echoed it
        // We started the close, so our own messages finish cleanly.
        for try await _ in client.messages {}
        await server.stop()
    }

    @Test("server-initiated close carries code and reason to the client")
    func serverCloses() async throws {
        let server = WebSocketServer()
        let port = try await server.start()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        try await accepted.send(.text("last words"))
        await accepted.close(code: CloseCode(4002), reason: "server bye")
        var received: [WebSocketMessage] = []
        do {
            for try await message in client.messages { received.append(message) }
            Issue.record("expected the client's messages to throw")
        } catch {
            #expect(error == .closed(CloseCode(4002), "server bye"))
        }
        #expect(received == [.text("last words")])
        #expect(client.closeCode == CloseCode(4002))
        #expect(client.closeReason == "server bye")
        await #expect(throws: WebSocketError.self) { try await client.send(.text("too late")) }
        await server.stop()
    }

    @Test("a normal close finishes the messages sequence without error")
    func normalClose() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        await client.close()
        for try await _ in client.messages {}
        #expect(client.closeCode == .normal)
        #expect(client.isClosed)
        await server.stop()
    }

    @Test("an unmasked frame from a client is answered with close 1002")
    func protocolErrorCloseCode() async throws {
        let (server, port) = try await startEchoServer()
        let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        let key = Handshake.makeKey()
        let url = try WebSocketURL("ws://127.0.0.1:\(port)/")
        try await raw.send(Handshake.request(url: url, key: key, headers: [], subprotocols: []))
        try await raw.send([0x81, 0x02, 0x68, 0x69])  // "hi", unmasked: illegal from a client
        var all: [UInt8] = []
        try await withTimeout {
            while let chunk = try await raw.receive() { all += chunk }  // until the server closes
        }
        let end = try #require(all.withUnsafeBytes { Handshake.headEnd(in: $0) })
        let frame = Array(all[end...])
        #expect(frame.count >= 4)
        #expect(frame.first == 0x88)
        #expect(Array(frame[2..<4]) == [0x03, 0xEA])  // 1002
        await raw.close()
        await server.stop()
    }

    @Test("callback API delivers messages and the close on the given queue")
    func callbacks() async throws {
        let (server, port) = try await startEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        let queue = DispatchQueue(label: "test.callbacks")
        let (events, continuation) = AsyncStream.makeStream(of: String.self)
        client.setHandlers(queue: queue, onMessage: { message in
            dispatchPrecondition(condition: .onQueue(queue))
            if case .text(let text) = message { continuation.yield(text) }
        }, onClose: { code, _ in
            continuation.yield("closed \(code?.rawValue ?? 0)")
            continuation.finish()
        })
        try client.sendWithoutWaiting(.text("a"))
        try await client.send(.text("b"))
        var iterator = events.makeAsyncIterator()
        let first = try await withTimeout { await iterator.next() }
        #expect(first == "a")
        #expect(await iterator.next() == "b")
        await client.close()
        #expect(await iterator.next() == "closed 1000")
        await server.stop()
    }

    @Test("callback connect reports the connection or the typed error on the queue")
    func callbackConnect() async throws {
        let (server, port) = try await startEchoServer()
        let queue = DispatchQueue(label: "test.connect")
        let connected = await withCheckedContinuation { continuation in
            WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", queue: queue) { result in
                dispatchPrecondition(condition: .onQueue(queue))
                continuation.resume(returning: result)
            }
        }
        let client = try connected.get()
        await client.close()
        await server.stop()
        let failed = await withCheckedContinuation { continuation in
            WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", queue: queue) { continuation.resume(returning: $0) }
        }
        #expect(throws: WebSocketError.connectionRefused(host: "127.0.0.1", port: port)) { try failed.get() }
    }

    @Test("back-pressure: a peer that does not read makes send suspend with bounded memory")
    func backPressure() async throws {
        var options = WebSocketOptions()
        options.writeBufferHighWater = 256 * 1024
        let (client, peerServer, raw, leftover) = try await connectToRawPeer(options: options)
        let messageSize = 60_000
        let total = 400  // 24 MB: far more than the kernel buffers plus the peer's read limit
        let sent = Atomic<Int>(0)
        let sender = Task {
            let payload = [UInt8](repeating: 0x5A, count: messageSize)
            for _ in 0..<total {
                try await client.send(.binary(payload))
                sent.add(1, ordering: .relaxed)
            }
        }
        // Wait until the write buffer is past the high-water mark: the sender must now be suspended.
        try await withTimeout {
            while client.bufferedByteCount <= options.writeBufferHighWater { await Task.yield() }
        }
        // However long we look, the buffer stays bounded, and the sender cannot have finished: 24 MB do not
        // fit in the kernel's socket buffers plus the peer's small read queue.
        for _ in 0..<500 {
            #expect(client.bufferedByteCount <= options.writeBufferHighWater + messageSize + 14)
            await Task.yield()
        }
        #expect(sent.load(ordering: .relaxed) < total)
        // Now the peer reads everything: the sender resumes and every byte arrives.
        let frameSize = messageSize + 8  // 2-byte header, 16-bit length, 4-byte mask
        var received = leftover.count
        try await withTimeout(20) {
            while received < total * frameSize {
                guard let chunk = try await raw.receive() else { break }
                received += chunk.count
            }
        }
        try await sender.value
        #expect(received == total * frameSize)
        await raw.close()
        await client.close()
        await peerServer.stop()
    }

    @Test("read back-pressure: an app that does not consume messages stops the socket being read")
    func readBackPressure() async throws {
        var serverOptions = WebSocketOptions()
        serverOptions.writeBufferHighWater = 128 * 1024
        let server = WebSocketServer(options: serverOptions)
        let port = try await server.start()
        var options = WebSocketOptions()
        options.readBufferHighWater = 256 * 1024
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        var incoming = server.connections.makeAsyncIterator()
        let accepted = try #require(await incoming.next())
        let total = 400
        let payload = [UInt8](repeating: 7, count: 60_000)
        let sender = Task {
            for _ in 0..<total { try await accepted.send(.binary(payload)) }
        }
        // The client app reads nothing: its queue fills, reading pauses, the kernel buffers fill, and the
        // server's write buffer climbs past its high-water mark, where its sender waits.
        try await withTimeout {
            while accepted.bufferedByteCount <= serverOptions.writeBufferHighWater { await Task.yield() }
        }
        #expect(accepted.bufferedByteCount <= serverOptions.writeBufferHighWater + payload.count + 14)
        // Consuming resumes the flow; every message arrives.
        var count = 0
        try await withTimeout(20) {
            for try await message in client.messages {
                #expect(message.byteCount == payload.count)
                count += 1
                if count == total { break }
            }
        }
        try await sender.value
        #expect(count == total)
        await client.close()
        await server.stop()
    }

    @Test("echo over the poll(2) backend")
    func pollBackend() async throws {
        let loop = try EventLoop(name: "test.poll", backend: .poll)
        var options = WebSocketOptions()
        options.eventLoop = loop
        let (server, port) = try await startEchoServer(options: options)
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        var messages = client.messages.makeAsyncIterator()
        let big = [UInt8](repeating: 1, count: 500_000)
        try await withTimeout {
            try await client.send(.text("over poll"))
            #expect(try await messages.next() == .text("over poll"))
            try await client.send(.binary(big))
            #expect(try await messages.next() == .binary(big))
        }
        await client.close()
        await server.stop()
        await loop.stop()
    }

    @Test("keep-alive pings detect a dead peer once the pong timeout passes on the loop's clock")
    func keepAliveDetectsDeadPeer() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.pingInterval = .milliseconds(50)
        options.pongTimeout = .milliseconds(200)
        let (client, peerServer, raw, _) = try await connectToRawPeer(options: options)
        // The peer reads (so TCP stays healthy) but never answers: it is "dead" at the WebSocket level.
        let drain = Task { while try await raw.receive() != nil {} }
        // The first ping goes out at 50 ms; its pong is due by 250 ms. Just before that, still open.
        try await advance(clock, by: .milliseconds(50), on: loop)
        try await advance(clock, by: .milliseconds(199), on: loop)
        #expect(!client.isClosed)
        try await advance(clock, by: .milliseconds(1), on: loop)
        #expect(client.isClosed)
        do {
            try await withTimeout {
                for try await _ in client.messages {}
            }
            Issue.record("the dead peer was not detected")
        } catch let error as WebSocketError {
            guard case .timedOut = error else { Issue.record("unexpected error \(error)"); return }
        }
        #expect(client.closeCode == .abnormalClosure)
        _ = try? await drain.value
        await raw.close()
        await peerServer.stop()
        await loop.stop()
    }

    @Test("keep-alive pings keep a live connection open far beyond the pong timeout")
    func keepAliveLivePeer() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        let (server, port) = try await startEchoServer()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.pingInterval = .milliseconds(20)
        options.pongTimeout = .milliseconds(100)
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        var messages = client.messages.makeAsyncIterator()
        // 30 pings over 600 ms of virtual time. The peer answers each ping before it echoes the message
        // sent after it, so every echo means the ping's pong has arrived (and cancelled its timeout).
        for index in 0..<30 {
            try await advance(clock, by: .milliseconds(20), on: loop)
            try await client.send(.text("\(index)"))
            #expect(try await withTimeout { try await messages.next() } == .text("\(index)"))
        }
        #expect(!client.isClosed)
        await client.close()
        await server.stop()
        await loop.stop()
    }

    @Test("a client and a server on one virtual-time loop: ten minutes of both sides' keep-alives pass at once")
    func clientAndServerInVirtualTime() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.pingInterval = .seconds(20)
        options.pongTimeout = .seconds(10)
        let (server, port) = try await startEchoServer(options: options)
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        var messages = client.messages.makeAsyncIterator()
        // Each step, both sides ping; each answers the other's ping before the echo comes back.
        for index in 0..<30 {
            try await advance(clock, by: .seconds(20), on: loop)
            try await client.send(.text("\(index)"))
            #expect(try await withTimeout { try await messages.next() } == .text("\(index)"))
        }
        #expect(clock.now.offset == .seconds(600))
        #expect(!client.isClosed)
        await client.close()
        #expect(client.closeCode == .normal)
        await server.stop()
        await loop.stop()
    }

    @Test("a peer that never answers our close frame is dropped when the close timeout passes on the loop's clock")
    func closeHandshakeTimeout() async throws {
        let (loop, clock) = try makeVirtualTimeLoop()
        var options = WebSocketOptions()
        options.eventLoop = loop
        options.closeTimeout = .seconds(5)
        let (client, peerServer, raw, _) = try await connectToRawPeer(options: options)
        let closing = Task { await client.close(code: .normal, reason: "bye") }
        // Our close frame has arrived (masked, opcode 0x8): the close timer is armed with it.
        let frame = try await withTimeout { try await receive(from: raw) { $0.count >= 2 } }
        #expect(frame?.first == 0x88)
        #expect(await clock.waitForSleepers(1))
        // Positive control: a moment before the close timeout the connection waits for the peer.
        try await advance(clock, by: .seconds(5) - .milliseconds(1), on: loop)
        #expect(!client.isClosed)
        try await advance(clock, by: .milliseconds(1), on: loop)
        #expect(client.isClosed)
        try await withTimeout { await closing.value }
        // We started the close: the messages end cleanly, and the code says the handshake did not finish.
        #expect(try await client.receive() == nil)
        #expect(client.closeCode == .abnormalClosure)
        #expect(try await withTimeout { try await receive(from: raw) { _ in false } } == nil)
        await raw.close()
        await peerServer.stop()
        await loop.stop()
    }
}
