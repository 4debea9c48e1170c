import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket

/// The 16 KiB limit on a request head, however the head arrives.
@Suite("Handshake limits")
struct HandshakeLimitTests {
    /// An upgrade request padded with `count` headers of `padding` bytes each.
    private func request(headers count: Int, padding: Int) -> [UInt8] {
        var text = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        let value = String(repeating: "v", count: padding)
        for index in 0..<count { text += "X-\(index): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Sends `bytes` in chunks of `chunk` bytes and returns the server's status line.
    private func statusLine(for bytes: [UInt8], chunk: Int, port: UInt16) async throws -> String {
        let raw = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        for start in stride(from: 0, to: bytes.count, by: chunk) {
            try await raw.send(Array(bytes[start..<min(start + chunk, bytes.count)]))
        }
        let reply = try await withTimeout {
            try await receive(from: raw) { $0.contains(UInt8(ascii: "\n")) }
        }
        await raw.close()
        let text = String(decoding: reply ?? [], as: UTF8.self)
        // "\r\n" is one Character in Swift.
        return String(text.prefix { $0 != "\r\n" })
    }

    @Test("a head over 16 KiB gets 431 in one write, in many, and as 5,000 headers; one under it gets 101",
          arguments: [1 << 20, 1000, 100])
    func oversizedHeadIsRefused(chunk: Int) async throws {
        let (server, port) = try await startEchoServer()
        let big = request(headers: 20, padding: 1000)  // about 20 KB
        #expect(big.count > Handshake.maxHeadSize)
        #expect(try await statusLine(for: big, chunk: chunk, port: port) == "HTTP/1.1 431 Request Header Fields Too Large")
        let many = request(headers: 5000, padding: 1)
        #expect(try await statusLine(for: many, chunk: chunk, port: port) == "HTTP/1.1 431 Request Header Fields Too Large")
        // Positive control: just under the limit is accepted.
        let fits = request(headers: 15, padding: 1000)
        #expect(fits.count < Handshake.maxHeadSize)
        #expect(try await statusLine(for: fits, chunk: chunk, port: port) == "HTTP/1.1 101 Switching Protocols")
        await server.stop()
    }
}
