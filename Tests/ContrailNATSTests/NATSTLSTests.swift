import Contrail
import ContrailNATS
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// `tls://` URLs and `NATSOptions.tls`: the client upgrades to TLS after the server's plaintext `INFO`.
struct NATSTLSURLTests {
    @Test func tlsURLsParseAndAnotherSchemeIsRefused() throws {
        let url = try NATSServerURL(parsing: "tls://localhost:4443")
        #expect(url == NATSServerURL(host: "localhost", port: 4443, isSecure: true))
        #expect(url.description == "tls://localhost:4443")
        #expect(try NATSServerURL(parsing: url.description) == url)
        // Positive control: nats:// stays plain.
        #expect(try NATSServerURL(parsing: "nats://localhost:4443").isSecure == false)
        #expect(throws: NATSError.self) { try NATSServerURL(parsing: "wss://localhost:4443") }
    }

    /// A server that sends more than `INFO` before the TLS handshake: those bytes would pass as if they
    /// came through TLS (an injection), so the connection is refused.
    @Test func plaintextAfterINFOBeforeTheTLSHandshakeIsRefused() async throws {
        let server = TCPServer()
        let port = try await server.start()
        let info = #"{"server_id":"FAKE","version":"2.9.0","max_payload":1048576,"headers":true,"tls_required":true}"#
        let serving = Task {
            for await connection in server.connections {
                try? await connection.send(Array("INFO \(info)\r\n-ERR 'injected'\r\n".utf8))
                while (try? await connection.receive()) != nil {}
                return
            }
        }
        var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port, isSecure: true)])
        options.tls = TLSClientConfiguration(caBundlePath: TLSFixtures.path("ca.pem"))
        options.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
        do {
            let connection = try await NATSConnection.connect(options)
            Issue.record("connected")
            await connection.close()
        } catch {
            // The protocol violation, named within the failure to connect.
            guard case .connectionFailed(let why) = error else { Issue.record("\(error)"); return }
            #expect(why.contains("sent more than INFO before the TLS handshake"), "\(why)")
        }
        await server.stop()
        serving.cancel()
    }
}

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct NATSTLSTests {
    static func configuration(certificate: String = "server", authorization: String = "") -> String {
        """
        tls {
          cert_file: "\(TLSFixtures.path(certificate + ".pem"))"
          key_file: "\(TLSFixtures.path(certificate + "-key.pem"))"
        }
        \(authorization)
        """
    }

    func options(_ nats: NATSServerProcess, secure: Bool = true, ca: Bool = true) -> NATSOptions {
        var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: nats.port, isSecure: secure)])
        if ca { options.tls = TLSClientConfiguration(caBundlePath: TLSFixtures.path("ca.pem")) }
        options.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
        return options
    }

    /// What a connection publishes comes back on its subscription: it is past the handshake.
    func roundTrip(_ connection: NATSConnection) async throws {
        let subscription = try await connection.subscribe("tls.check")
        let payload = Array(repeating: UInt8(ascii: "x"), count: 100_000)
        try await connection.publish("tls.check", payload: payload)
        var iterator = subscription.messages.makeAsyncIterator()
        let message = try await withTimeout(.seconds(30)) { await iterator.next() }
        #expect(message?.payload == payload)
    }

    func refusal(_ options: NATSOptions) async -> NATSError? {
        do {
            let connection = try await NATSConnection.connect(options)
            await connection.close()
            return nil
        } catch {
            return error
        }
    }

    @Test func aTLSRequiringNATSIsJoinedWithTheCABundleAndRefusedOtherwise() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.configuration())
        let connection = try await NATSConnection.connect(options(nats))
        #expect(await connection.serverInfo?.tlsRequired == true)
        try await roundTrip(connection)
        await connection.close()

        // The system's roots do not know the test CA.
        guard case .tls(.untrustedCertificate)? = await refusal(options(nats, ca: false)) else {
            Issue.record("\(String(describing: await refusal(options(nats, ca: false))))")
            return
        }
        // A plain connection is told to use TLS.
        let plain = await refusal(options(nats, secure: false, ca: false))
        #expect(plain == .tlsRequired("nats://127.0.0.1:\(nats.port)"))
        #expect(plain?.description.contains("tls://") == true)
        // NATSOptions.tls alone asks for TLS, also for a nats:// URL.
        let viaOptions = try await NATSConnection.connect(options(nats, secure: false))
        try await roundTrip(viaOptions)
        await viaOptions.close()
        await nats.stop()
    }

    @Test func aCertificateForAnotherHostIsATypedError() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.configuration(certificate: "wronghost"))
        #expect(await refusal(options(nats)) == .tls(.hostnameMismatch(host: "127.0.0.1")))
        await nats.stop()
    }

    @Test func aNATSWithoutTLSIsRefusedWhenTLSIsAskedFor() async throws {
        let nats = try await NATSServerProcess.start()
        guard case .tls(.handshakeFailed(let why))? = await refusal(options(nats)) else {
            Issue.record("not refused")
            return
        }
        #expect(why.contains("does not offer TLS"), "\(why)")
        // Positive control: the same server plainly.
        let connection = try await NATSConnection.connect(options(nats, secure: false, ca: false))
        try await roundTrip(connection)
        await connection.close()
        await nats.stop()
    }

    /// `contrail serve --nats-ca FILE`: two servers share a scope through a TLS-only NATS; without the
    /// CA, sessions are refused with the TLS reason.
    @MainActor
    @Test func contrailServeJoinsATLSNATSWithTheCABundle() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.configuration())
        let ca = ["--nats-ca", TLSFixtures.path("ca.pem")]
        let one = try await ServeProcess.start(natsURL: "tls://127.0.0.1:\(nats.port)", arguments: ca)
        let two = try await ServeProcess.start(natsURL: "nats://127.0.0.1:\(nats.port)", arguments: ca)
        let a = try await deckReplica(url: one.url)
        let b = try await deckReplica(url: two.url)
        a.1.title = "through a TLS NATS"
        #expect(await eventually(.seconds(30)) { b.1.title == "through a TLS NATS" })
        await a.0.close(); await b.0.close()

        let untrusted = try await ServeProcess.start(natsURL: "tls://127.0.0.1:\(nats.port)", quiet: false)
        await #expect(throws: SyncError.self) { _ = try await deckReplica(url: untrusted.url) }
        #expect(await untrusted.child.waitForOutput(containing: "TLS to the NATS server failed"), "\(untrusted.child.text)")
        await untrusted.kill(); await one.kill(); await two.kill(); await nats.stop()
    }

    @Test func aUserAndPasswordGoOverTLS() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.configuration(authorization: NATSAuthorizationTests.users))
        var good = options(nats)
        good.credentials = .userPassword(user: "alice", password: "wonderland-42")
        let connection = try await NATSConnection.connect(good)
        #expect(await connection.serverInfo?.authRequired == true)
        try await roundTrip(connection)
        await connection.close()
        var wrong = options(nats)
        wrong.credentials = .userPassword(user: "alice", password: "wrong-password")
        guard case .authorizationFailed? = await refusal(wrong) else { Issue.record("not refused"); return }
        await nats.stop()
    }
}
