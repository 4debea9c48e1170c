import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailWebSocket

/// `WebSocketServer` serving TLS (`serverTLS`): with our client, with Python's `ssl` as an independent
/// client, and with its certificate replaced while it runs.
@Suite("TLS server")
struct TLSServerTests {
    static func serverOptions(_ context: TLSServerContext) -> WebSocketOptions {
        var options = WebSocketOptions()
        options.serverTLS = context
        return options
    }

    static func client(pin: String? = nil) throws -> WebSocketOptions {
        var options = WebSocketOptions()
        options.tls.caBundlePath = TLSFixtures.path("ca.pem")
        if let pin { options.tls.pinnedKeys = [try TLSFixtures.pin(pin)] }
        return options
    }

    @Test("our client and our TLS server: echo, large messages, a normal close")
    func echo() async throws {
        let context = try TLSServerContext(certificateChainPath: TLSFixtures.path("server.pem"),
                                           privateKeyPath: TLSFixtures.path("server-key.pem"))
        let (server, port) = try await startEchoServer(options: Self.serverOptions(context), realTime: true)
        let client = try await WebSocketConnection.connect(to: "wss://localhost:\(port)/", options: try Self.client())
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await withTimeout(60) {
            var messages = client.messages.makeAsyncIterator()
            for i in 0..<50 {
                try await client.send(.text("message \(i)"))
                #expect(try await messages.next() == .text("message \(i)"))
            }
            try await client.send(.binary(large))
            #expect(try await messages.next() == .binary(large))
        }
        await client.close()
        #expect(client.closeCode == .normal)
        // Positive control for the plain client below: a plain client speaks HTTP into the TLS port.
        await #expect(throws: WebSocketError.self) {
            _ = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        }
        await server.stop()
    }

    @Test("Python's ssl as the client: TLS 1.3, the echo, the closing handshake and close_notify")
    func independentClient() async throws {
        let context = try TLSServerContext(certificateChainPath: TLSFixtures.path("server.pem"),
                                           privateKeyPath: TLSFixtures.path("server-key.pem"))
        let (server, port) = try await startEchoServer(options: Self.serverOptions(context), realTime: true)
        let python = try TLSFixtures.python("tls_ws_client.py", ["--port", "\(port)", "--ca", TLSFixtures.path("ca.pem")])
        #expect(await python.waitForExit())
        #expect(python.termination == .exited(0))
        #expect(python.text.contains("tls TLSv1.3\n"))
        #expect(python.text.contains("echo: hello over TLS\n"))
        #expect(python.text.contains("closed: opcode 8\n"))
        #expect(python.text.contains("close_notify: received\n"), "\(python.text)")
        await server.stop()
    }

    @Test("reload: new connections get the new certificate, a bad file keeps the old one")
    func reload() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "contrail-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let certificate = folder.appending(path: "cert.pem").path
        let key = folder.appending(path: "key.pem").path
        func install(_ name: String) throws {
            for (from, to) in [("\(name).pem", certificate), ("\(name)-key.pem", key)] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: TLSFixtures.path(from), toPath: to)
            }
        }
        try install("server")
        let context = try TLSServerContext(certificateChainPath: certificate, privateKeyPath: key)
        let (server, port) = try await startEchoServer(options: Self.serverOptions(context), realTime: true)
        let url = "wss://127.0.0.1:\(port)/"
        let first = try await WebSocketConnection.connect(to: url, options: try Self.client(pin: "server"))

        try install("server2")
        try context.reload()
        let second = try await WebSocketConnection.connect(to: url, options: try Self.client(pin: "server2"))
        await #expect(throws: WebSocketError.tls(.pinMismatch)) {
            _ = try await WebSocketConnection.connect(to: url, options: try Self.client(pin: "server"))
        }
        // The connection made before the reload keeps working.
        try await withTimeout {
            var messages = first.messages.makeAsyncIterator()
            try await first.send(.text("still here"))
            #expect(try await messages.next() == .text("still here"))
        }

        // A broken file: the reload fails with the reason, and the last good certificate stays.
        try Data("not a certificate".utf8).write(to: URL(filePath: certificate))
        #expect(throws: TLSError.self) { try context.reload() }
        let third = try await WebSocketConnection.connect(to: url, options: try Self.client(pin: "server2"))
        for connection in [first, second, third] { await connection.close() }
        await server.stop()
    }

    @Test("a key that does not match the certificate, or a missing file, is invalidCertificateFile")
    func invalidFiles() throws {
        // Positive control.
        _ = try TLSServerContext(certificateChainPath: TLSFixtures.path("server.pem"), privateKeyPath: TLSFixtures.path("server-key.pem"))
        #expect {
            _ = try TLSServerContext(certificateChainPath: TLSFixtures.path("server.pem"), privateKeyPath: TLSFixtures.path("server2-key.pem"))
        } throws: { error in
            guard case TLSError.invalidCertificateFile(let path, let reason) = error else { return false }
            return path == TLSFixtures.path("server2-key.pem") && reason.contains("mismatch")
        }
        #expect {
            _ = try TLSServerContext(certificateChainPath: "/nonexistent/cert.pem", privateKeyPath: TLSFixtures.path("server-key.pem"))
        } throws: { error in
            guard case TLSError.invalidCertificateFile(let path, _) = error else { return false }
            return path == "/nonexistent/cert.pem"
        }
    }
}
