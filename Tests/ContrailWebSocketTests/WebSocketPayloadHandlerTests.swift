import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket

/// The opcode and size of every payload a handler saw, in order.
private final class SeenPayloads: Sendable {
    private let entries = SanitizerVisibleMutex<[(Opcode, Int)]>([])
    func append(_ opcode: Opcode, _ count: Int) { entries.withLock { $0.append((opcode, count)) } }
    var opcodes: [Opcode] { entries.withLock { $0.map(\.0) } }
    var sizes: [Int] { entries.withLock { $0.map(\.1) } }
}

/// A server whose every connection echoes through `setPayloadHandler` and
/// `sendWithoutWaiting(_:payload:)`, noting the payloads its handler saw.
private func startPayloadEchoServer(options: WebSocketOptions = .init())
    async throws -> (server: WebSocketServer, port: UInt16, seen: SeenPayloads)
{
    let server = WebSocketServer(host: "127.0.0.1", port: 0, options: options)
    let port = try await server.start()
    let seen = SeenPayloads()
    Task {
        for await connection in server.connections {
            connection.setPayloadHandler { [weak connection] opcode, payload in
                seen.append(opcode, payload.count)
                try? connection?.sendWithoutWaiting(opcode, payload: payload)
            }
        }
    }
    return (server, port, seen)
}

/// A raw TCP client that completed the opening handshake with the server at `port`.
private func rawClient(port: UInt16) async throws -> TCPConnection {
    let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
    let url = try WebSocketURL("ws://127.0.0.1:\(port)/")
    try await raw.send(Handshake.request(url: url, key: Handshake.makeKey(), headers: [], subprotocols: []))
    let head = try await withTimeout {
        try await receive(from: raw) { bytes in bytes.withUnsafeBytes { Handshake.headEnd(in: $0) } != nil }
    }
    #expect(head.map { String(decoding: $0, as: UTF8.self).hasPrefix("HTTP/1.1 101") } == true)
    return raw
}

/// A masked client frame.
private func clientFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    var bytes: [UInt8] = []
    FrameEncoder.encode(WebSocketFrame(fin: fin, opcode: opcode, payload: payload), maskingKey: 0x8F12_7EA3, into: &bytes)
    return bytes
}

/// Reads server frames from `raw` until `count` have arrived or the server closed (bytes past them are
/// dropped: call it only when the server sends nothing more meanwhile).
private func readFrames(_ raw: TCPConnection, count: Int) async throws -> [WebSocketFrame] {
    var decoder = FrameDecoder(role: .client, maxFrameSize: 1 << 22)
    var frames: [WebSocketFrame] = []
    try await withTimeout(20) {
        while frames.count < count, let chunk = try await raw.receive() {
            decoder.append(chunk)
            while let frame = try decoder.next() { frames.append(frame) }
        }
    }
    return frames
}

@Suite("WebSocket payload handler")
struct WebSocketPayloadHandlerTests {
    @Test("text and binary come to the handler as opcode and bytes and echo back intact, small and large, in order")
    func echoesTextAndBinaryAsBytes() async throws {
        var options = WebSocketOptions()
        options.maxFrameSize = 4 << 20
        options.maxMessageSize = 4 << 20
        let (server, port, seen) = try await startPayloadEchoServer(options: options)
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/", options: options)
        let unit = "héllo wörld 🎉 "
        let messages: [WebSocketMessage] = [
            .text("a"), .binary([0, 255, 7]), .text(String(repeating: unit, count: 20_000)), .text(""),
            .binary((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), .text(String(repeating: "x", count: 70_000)),
        ]
        var echoes = client.messages.makeAsyncIterator()
        for message in messages {
            try await client.send(message)
            #expect(try await withTimeout(20) { try await echoes.next() } == message)
        }
        let expected: [(Opcode, Int)] = messages.map { message in
            switch message {
            case .text(let text): (.text, text.utf8.count)
            case .binary(let bytes): (.binary, bytes.count)
            }
        }
        #expect(seen.opcodes == expected.map(\.0))
        #expect(seen.sizes == expected.map(\.1))
        await client.close()
        await server.stop()
    }

    @Test("a fragmented text message comes whole, as its UTF-8 bytes, with control frames between its fragments")
    func fragmentedTextComesWhole() async throws {
        let (server, port, seen) = try await startPayloadEchoServer()
        let raw = try await rawClient(port: port)
        let first = Array("héllo ".utf8)
        let second = Array("wörld".utf8)
        // The split falls inside "ö" (2 bytes): only the whole message is valid UTF-8.
        let cut = second.count - 4
        try await raw.send(clientFrame(.text, first, fin: false) + clientFrame(.continuation, Array(second[..<cut]), fin: false)
            + clientFrame(.ping, [9]) + clientFrame(.continuation, Array(second[cut...])))
        let frames = try await readFrames(raw, count: 2)
        #expect(frames == [WebSocketFrame(opcode: .pong, payload: [9]), WebSocketFrame(opcode: .text, payload: first + second)])
        #expect(seen.opcodes == [.text])
        await raw.close()
        await server.stop()
    }

    @Test("invalid UTF-8 is refused with 1007 before the handler sees it; valid text before it is echoed")
    func invalidTextIsRefused() async throws {
        let (server, port, seen) = try await startPayloadEchoServer()
        let raw = try await rawClient(port: port)
        // Positive control first: valid text is echoed (and once it is, the handler is in place).
        try await raw.send(clientFrame(.text, Array("ok ✓".utf8)))
        #expect(try await readFrames(raw, count: 1) == [WebSocketFrame(opcode: .text, payload: Array("ok ✓".utf8))])
        // Then a surrogate (ED A0 80), which UTF-8 does not allow.
        try await raw.send(clientFrame(.text, Array("ab".utf8) + [0xED, 0xA0, 0x80]))
        let frames = try await readFrames(raw, count: 1)
        #expect(frames.count == 1)
        #expect(frames.first?.opcode == .close)
        #expect(frames.first?.payload.prefix(2) == [0x03, 0xEF])  // 1007
        #expect(seen.sizes.count == 1)
        await raw.close()
        await server.stop()
    }

    @Test("a message over maxMessageSize is refused with 1009; one at the limit is echoed")
    func oversizedMessageIsRefused() async throws {
        var options = WebSocketOptions()
        options.maxFrameSize = 1000
        options.maxMessageSize = 100
        let (server, port, seen) = try await startPayloadEchoServer(options: options)
        let raw = try await rawClient(port: port)
        try await raw.send(clientFrame(.binary, [UInt8](repeating: 7, count: 100)))
        let echo = try await readFrames(raw, count: 1)
        #expect(echo == [WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 7, count: 100))])
        try await raw.send(clientFrame(.binary, [UInt8](repeating: 8, count: 101)))
        let frames = try await readFrames(raw, count: 1)
        #expect(frames.count == 1)
        #expect(frames.first?.opcode == .close)
        #expect(frames.first?.payload.prefix(2) == [0x03, 0xF1])  // 1009
        #expect(seen.sizes == [100])
        await raw.close()
        await server.stop()
    }

    @Test("sendWithoutWaiting(_:payload:) refuses a control opcode and text that is not UTF-8 with typed errors; valid text goes out")
    func sendingBytesChecksOpcodeAndText() async throws {
        let (server, port, _) = try await startPayloadEchoServer()
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        var echoes = client.messages.makeAsyncIterator()
        #expect(throws: WebSocketError.self) { try client.sendWithoutWaiting(.ping, payload: [1]) }
        do {
            try client.sendWithoutWaiting(.text, payload: [0x61, 0xFF])
            Issue.record("invalid UTF-8 was sent")
        } catch {
            guard case .protocolViolation(let code, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(code == .invalidFramePayloadData)
        }
        // Control: valid text and binary go out and come back.
        try client.sendWithoutWaiting(.text, payload: Array("héllo".utf8))
        try client.sendWithoutWaiting(.binary, payload: [0xFF, 0x00])
        #expect(try await withTimeout { try await echoes.next() } == .text("héllo"))
        #expect(try await withTimeout { try await echoes.next() } == .binary([0xFF, 0x00]))
        await client.close()
        await server.stop()
    }

    @Test("text sent back from the handler skips a second UTF-8 check only when unchanged: a changed copy and binary bytes sent as text are checked")
    func handledTextIsCheckedAgainWhenItCouldDiffer() async throws {
        let server = WebSocketServer(host: "127.0.0.1", port: 0)
        let port = try await server.start()
        // What each attempt to send invalid text from the server threw (nil: it went out).
        let outcomes = SanitizerVisibleMutex<[String: CloseCode?]>([:])
        let kept = SanitizerVisibleMutex<[UInt8]?>(nil)
        @Sendable func attempt(_ name: String, _ body: () throws -> Void) {
            do {
                try body()
                outcomes.withLock { $0[name] = .some(nil) }
            } catch {
                guard case .protocolViolation(let code, _)? = error as? WebSocketError else { return }
                outcomes.withLock { $0[name] = code }
            }
        }
        Task {
            for await connection in server.connections {
                connection.setPayloadHandler { [weak connection] opcode, payload in
                    guard let connection else { return }
                    if opcode == .binary {
                        // Invalid UTF-8 that arrived as binary, sent back as text.
                        attempt("binary as text") { try connection.sendWithoutWaiting(.text, payload: payload) }
                        return
                    }
                    // A copy of the handled text, changed into invalid UTF-8 (the same length).
                    var changed = payload
                    changed[0] = 0xFF
                    attempt("changed copy") { try connection.sendWithoutWaiting(.text, payload: changed) }
                    kept.withLock { $0 = payload }
                    // Control: the unchanged text goes out.
                    attempt("unchanged") { try connection.sendWithoutWaiting(.text, payload: payload) }
                }
            }
        }
        let client = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        var echoes = client.messages.makeAsyncIterator()
        try await client.send(.text("héllo wörld"))
        #expect(try await withTimeout { try await echoes.next() } == .text("héllo wörld"))
        try await client.send(.binary([0x61, 0xFF, 0xFE]))
        #expect(await eventually { outcomes.withLock { $0.count } == 3 })
        let seen = outcomes.withLock { $0 }
        #expect(seen["unchanged"] == .some(nil))
        #expect(seen["changed copy"] == .invalidFramePayloadData)
        #expect(seen["binary as text"] == .invalidFramePayloadData)
        // The handled array itself was never changed.
        #expect(kept.withLock { $0 } == Array("héllo wörld".utf8))
        await client.close()
        await server.stop()
    }
}
