import Contrail
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// `contrail serve --tls-cert/--tls-key` in a child process: our sync client over `wss://`, Python's
/// `ssl` fetching the pages over `https://`, and certificate rotation on SIGHUP.
@Suite("contrail serve over TLS")
struct ServeTLSTests {
    /// A temporary folder with copies of fixture `name`'s certificate and key as cert.pem and key.pem.
    final class CertificateFolder {
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-serve-tls-\(UUID().uuidString)")
        var certificate: String { url.appending(path: "cert.pem").path }
        var key: String { url.appending(path: "key.pem").path }

        init(_ name: String) throws {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try install(name)
        }

        func install(_ name: String) throws {
            for (from, to) in [("\(name).pem", certificate), ("\(name)-key.pem", key)] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: TLSFixtures.path(from), toPath: to)
            }
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// `contrail serve` on a free port with TLS from `folder`; its port.
    static func serve(_ folder: CertificateFolder, _ arguments: [String] = []) async throws -> (ChildProcess, UInt16) {
        let child = try ChildProcess(try ServerProcess.executable,
                                     ["serve", "--port", "0", "--tls-cert", folder.certificate, "--tls-key", folder.key,
                                      // The tests' clients run on a main actor the whole suite shares: in a
                                      // full run their SessionCreate once came more than the default 10 s
                                      // after the upgrade (a 4096 close), which is not what these tests test.
                                      "--establish-timeout", "120"] + arguments)
        let port = try await child.port(after: "listening on wss://127.0.0.1:", terminator: { $0 == "/" })
        return (child, port)
    }

    static func options(pin: String? = nil) throws -> WebSocketOptions {
        var options = WebSocketOptions()
        options.tls.caBundlePath = TLSFixtures.path("ca.pem")
        if let pin { options.tls.pinnedKeys = [try TLSFixtures.pin(pin)] }
        return options
    }

    @MainActor
    @Test("two sync clients converge through wss://; Python's ssl gets the pages over https://")
    func syncAndPages() async throws {
        let folder = try CertificateFolder("server")
        let (child, port) = try await Self.serve(folder)
        // The inspector line follows the listening line: waited for, not read at once (a full run once
        // read the output between the two).
        #expect(await child.waitForOutput(containing: "inspector https://127.0.0.1:\(port)/", timeout: .seconds(120)))
        var options = testOptions()
        options.tls.caBundlePath = TLSFixtures.path("ca.pem")
        let writer = Scope(name: "tls-board")
        writer.root = Board()
        let reader = Scope(name: "tls-board")
        reader.root = Board()
        let a = try await Client.sync(writer, url: "wss://localhost:\(port)/", options: options)
        let b = try await Client.sync(reader, url: "wss://127.0.0.1:\(port)/", options: options)
        (writer.root as? Board)?.title = "over TLS"
        #expect(await eventually { (reader.root as? Board)?.title == "over TLS" })

        // Without the CA the same server is refused, and the client says why.
        var untrusting = testOptions()
        untrusting.connectTimeout = .seconds(30)
        let refused = Client(url: "wss://127.0.0.1:\(port)/", options: untrusting)
        await #expect {
            try await refused.connect()
        } throws: { error in
            "\(error)".contains("not trusted")
        }
        await refused.close()

        let python = try TLSFixtures.python("tls_ws_client.py", ["--port", "\(port)", "--ca", TLSFixtures.path("ca.pem"), "--get", "/contrail.js"])
        #expect(await python.waitForExit())
        #expect(python.text.contains("tls TLSv1.3\n"))
        #expect(python.text.contains("status: HTTP/1.1 200 OK\n"), "\(python.text)")
        await a.close()
        await b.close()
        await child.kill()
    }

    @Test("SIGHUP rotates the certificate for new connections; a broken file keeps the current one")
    func rotationOnSIGHUP() async throws {
        let folder = try CertificateFolder("server")
        let (child, port) = try await Self.serve(folder)
        let url = "wss://127.0.0.1:\(port)/"
        let before = try await WebSocketConnection.connect(to: url, options: try Self.options(pin: "server"))
        await before.close()

        try folder.install("server2")
        child.signal(SIGHUP)
        #expect(await child.waitForOutput(containing: "SIGHUP: reloaded the TLS certificate"))
        let after = try await WebSocketConnection.connect(to: url, options: try Self.options(pin: "server2"))
        await after.close()
        await #expect(throws: WebSocketError.tls(.pinMismatch)) {
            _ = try await WebSocketConnection.connect(to: url, options: try Self.options(pin: "server"))
        }

        try Data("-----BEGIN CERTIFICATE-----\ngarbage\n".utf8).write(to: URL(filePath: folder.certificate))
        child.signal(SIGHUP)
        #expect(await child.waitForOutput(containing: "SIGHUP: keeping the current TLS certificate"))
        let kept = try await WebSocketConnection.connect(to: url, options: try Self.options(pin: "server2"))
        await kept.close()
        #expect(child.isRunning)
        await child.kill()
    }

    @Test("--tls-cert without --tls-key, and an unreadable certificate, are usage errors")
    func usageErrors() async throws {
        let folder = try CertificateFolder("server")
        let alone = try ChildProcess(try ServerProcess.executable, ["serve", "--port", "0", "--tls-cert", folder.certificate])
        #expect(await alone.waitForExit())
        #expect(alone.termination != .exited(0))
        #expect(alone.text.contains("--tls-cert and --tls-key go together"))
        let missing = try ChildProcess(try ServerProcess.executable,
                                       ["serve", "--port", "0", "--tls-cert", "/nonexistent.pem", "--tls-key", folder.key])
        #expect(await missing.waitForExit())
        #expect(missing.termination != .exited(0))
        #expect(missing.text.contains("/nonexistent.pem"))
    }
}
