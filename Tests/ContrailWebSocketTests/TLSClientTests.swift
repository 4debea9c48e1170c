import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailWebSocket

/// The `wss://` client against an independent TLS endpoint: Python's `ssl` module terminating TLS in
/// front of our plain echo server, with the committed test certificates.
@Suite("TLS client")
struct TLSClientTests {
    /// Trusts the test CA only.
    static var trustingTestCA: WebSocketOptions {
        var options = WebSocketOptions()
        options.tls.caBundlePath = TLSFixtures.path("ca.pem")
        return options
    }

    @Test("wss:// echoes through Python's ssl, by address and by name, small and large messages")
    func echoThroughIndependentTerminator() async throws {
        let (server, backend) = try await startEchoServer(realTime: true)
        let (terminator, ports) = try await TLSFixtures.terminator(backendPort: backend, certificates: ["server"])
        let port = try #require(ports["server"])
        for host in ["127.0.0.1", "localhost"] {
            let client = try await WebSocketConnection.connect(to: "wss://\(host):\(port)/echo", options: Self.trustingTestCA)
            let large = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try await withTimeout(30) {
                var messages = client.messages.makeAsyncIterator()
                try await client.send(.text("hello over TLS"))
                #expect(try await messages.next() == .text("hello over TLS"))
                try await client.send(.binary(large))
                #expect(try await messages.next() == .binary(large))
            }
            await client.close()
            #expect(client.closeCode == .normal)
        }
        await terminator.kill()
        await server.stop()
    }

    /// Each bad certificate, served by the independent endpoint, is refused with the error naming why.
    @Test("bad certificates are typed errors that name the reason")
    func badCertificates() async throws {
        let (server, backend) = try await startEchoServer(realTime: true)
        let names = ["server", "expired", "notyet", "wronghost", "selfsigned"]
        let (terminator, ports) = try await TLSFixtures.terminator(backendPort: backend, certificates: names)
        func outcome(_ name: String, _ options: WebSocketOptions = TLSClientTests.trustingTestCA) async -> WebSocketError? {
            do {
                let client = try await WebSocketConnection.connect(to: "wss://127.0.0.1:\(ports[name] ?? 0)/", options: options)
                await client.close()
                return nil
            } catch {
                return error
            }
        }
        // Positive control: the good certificate with the same options.
        #expect(await outcome("server") == nil)
        #expect(await outcome("expired") == .tls(.certificateExpired))
        #expect(await outcome("notyet") == .tls(.certificateNotYetValid))
        #expect(await outcome("wronghost") == .tls(.hostnameMismatch(host: "127.0.0.1")))
        let selfSigned = await outcome("selfsigned")
        guard case .tls(.untrustedCertificate) = selfSigned else {
            Issue.record("a self-signed certificate gave \(String(describing: selfSigned))")
            return
        }
        // The good certificate without the test CA: the system's roots do not know it.
        let unknownCA = await outcome("server", WebSocketOptions())
        guard case .tls(.untrustedCertificate) = unknownCA else {
            Issue.record("a certificate from an unknown CA gave \(String(describing: unknownCA))")
            return
        }
        await terminator.kill()
        await server.stop()
    }

    @Test("a pinned key is accepted; another key is pinMismatch; a malformed pin is refused before connecting")
    func pinning() async throws {
        let (server, backend) = try await startEchoServer(realTime: true)
        let (terminator, ports) = try await TLSFixtures.terminator(backendPort: backend, certificates: ["server"])
        let url = "wss://127.0.0.1:\(ports["server"] ?? 0)/"
        var options = Self.trustingTestCA
        options.tls.pinnedKeys = [try TLSFixtures.pin("server2"), try TLSFixtures.pin("server")]
        let client = try await WebSocketConnection.connect(to: url, options: options)
        try await withTimeout {
            var messages = client.messages.makeAsyncIterator()
            try await client.send(.text("pinned"))
            #expect(try await messages.next() == .text("pinned"))
        }
        await client.close()

        options.tls.pinnedKeys = [try TLSFixtures.pin("server2")]
        await #expect(throws: WebSocketError.tls(.pinMismatch)) {
            _ = try await WebSocketConnection.connect(to: url, options: options)
        }
        options.tls.pinnedKeys = ["not-a-pin"]
        await #expect(throws: WebSocketError.tls(.invalidConfiguration("the pin 'not-a-pin' is not the base64 of a SHA-256 digest (32 bytes)"))) {
            _ = try await WebSocketConnection.connect(to: url, options: options)
        }
        await terminator.kill()
        await server.stop()
    }

    @Test("TLS 1.2 is the minimum: a TLS 1.2 server is accepted, a TLS 1.1 one refused")
    func minimumVersion() async throws {
        let (server, backend) = try await startEchoServer(realTime: true)
        let (terminator, ports) = try await TLSFixtures.terminator(
            backendPort: backend, certificates: [],
            listeners: [("tls12", "server", "1.2"), ("tls11", "server", "1.1")])
        let client = try await WebSocketConnection.connect(to: "wss://127.0.0.1:\(ports["tls12"] ?? 0)/", options: Self.trustingTestCA)
        try await withTimeout {
            var messages = client.messages.makeAsyncIterator()
            try await client.send(.text("over TLS 1.2"))
            #expect(try await messages.next() == .text("over TLS 1.2"))
        }
        await client.close()
        do {
            _ = try await WebSocketConnection.connect(to: "wss://127.0.0.1:\(ports["tls11"] ?? 0)/", options: Self.trustingTestCA)
            Issue.record("connected over TLS 1.1")
        } catch {
            guard case .tls(.handshakeFailed(let reason)) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(reason.contains("version") || reason.contains("protocol"), "\(reason)")
        }
        await terminator.kill()
        await server.stop()
    }

    @Test("a missing CA bundle and a server that does not speak TLS are typed errors")
    func configurationAndProtocolErrors() async throws {
        var options = WebSocketOptions()
        options.tls.caBundlePath = TLSFixtures.path("no-such-ca.pem")
        do {
            _ = try await WebSocketConnection.connect(to: "wss://127.0.0.1:1/", options: options)
            Issue.record("connected with a CA bundle that does not exist")
        } catch {
            guard case .tls(.invalidCertificateFile(let path, _)) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(path == TLSFixtures.path("no-such-ca.pem"))
        }
        // A plain WebSocket server does not answer a ClientHello (it waits for an HTTP head until its
        // handshake timeout, here short), then closes.
        var plainOptions = WebSocketOptions()
        plainOptions.handshakeTimeout = .seconds(1)
        let (server, port) = try await startEchoServer(options: plainOptions, realTime: true)
        do {
            _ = try await WebSocketConnection.connect(to: "wss://127.0.0.1:\(port)/", options: Self.trustingTestCA)
            Issue.record("a TLS handshake with a plain server succeeded")
        } catch {
            guard case .tls(.handshakeFailed) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
        }
        await server.stop()
        // Positive control: a plain server like it (with the default handshake timeout, which a loaded
        // machine cannot make it miss) over ws://.
        let (control, controlPort) = try await startEchoServer(realTime: true)
        let plain = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(controlPort)/")
        await plain.close()
        await control.stop()
    }
}
