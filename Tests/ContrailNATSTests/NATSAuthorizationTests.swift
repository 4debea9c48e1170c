import Contrail
import ContrailNATS
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// Credentials for a NATS that requires them: parsing them from a file or the environment without
/// ever showing the secret, and connecting to `nats-server`s configured with users and with a token.
struct NATSCredentialsTests {
    @Test func aFileOrTheEnvironmentGivesAUserAndPasswordOrAToken() throws {
        #expect(try NATSCredentials.parsing("""
            # for the cluster
            CONTRAIL_NATS_USER=alice
            CONTRAIL_NATS_PASSWORD=p=a ss\r

            """) == .userPassword(user: "alice", password: "p=a ss"))
        #expect(try NATSCredentials.parsing("CONTRAIL_NATS_TOKEN=t0k") == .token("t0k"))
        // CRLF line ends (a file written on Windows): "\r\n" is one Character to Swift.
        #expect(try NATSCredentials.parsing("CONTRAIL_NATS_USER=alice\r\nCONTRAIL_NATS_PASSWORD=pw\r\n")
            == .userPassword(user: "alice", password: "pw"))
        #expect(try NATSCredentials.environment(["CONTRAIL_NATS_TOKEN": "t0k", "HOME": "/"]) == .token("t0k"))
        #expect(try NATSCredentials.environment(["CONTRAIL_NATS_USER": "bob", "CONTRAIL_NATS_PASSWORD": "pw"])
            == .userPassword(user: "bob", password: "pw"))
        #expect(try NATSCredentials.environment(["HOME": "/"]) == NATSCredentials.none)
    }

    @Test func incompleteOrAmbiguousCredentialsAreTypedErrorsThatNeverShowTheSecret() {
        let bad: [String] = [
            "CONTRAIL_NATS_USER=alice",  // no password
            "CONTRAIL_NATS_PASSWORD=hunter2-secret",  // no user
            "CONTRAIL_NATS_TOKEN=hunter2-secret\nCONTRAIL_NATS_USER=alice\nCONTRAIL_NATS_PASSWORD=hunter2-secret",
            "CONTRAIL_NATS_TOKEN=",
            "hunter2-secret",  // not NAME=value
            "PASSWORD=hunter2-secret",  // unknown name
            "# nothing\n",
        ]
        for text in bad {
            do {
                _ = try NATSCredentials.parsing(text)
                Issue.record("accepted \(text.debugDescription)")
            } catch {
                guard case .invalidCredentials(let why) = error else { Issue.record("\(error)"); continue }
                #expect(!why.contains("hunter2"), "\(why)")
            }
        }
    }

    @Test func descriptionsAndMirrorsHideTheSecret() {
        for credentials in [NATSCredentials.userPassword(user: "alice", password: "hunter2-secret"), .token("hunter2-secret")] {
            var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1")])
            options.credentials = credentials
            var dumped = ""
            dump(options, to: &dumped)
            for text in ["\(credentials)", String(reflecting: credentials), "\(options)", dumped] {
                #expect(!text.contains("hunter2"), "\(text)")
            }
            // Positive control: the kind (and the user) are still shown.
            #expect("\(options)".contains(credentials == .token("hunter2-secret") ? "a token" : "alice"))
        }
    }

    @Test func aURLWithCredentialsIsRefusedWithoutEchoingThem() throws {
        for text in ["nats://alice:hunter2-secret@127.0.0.1:4222", "hunter2-secret@localhost", "tls://a:hunter2-secret@h"] {
            #expect(throws: NATSError.credentialsInURL) { try NATSServerURL(parsing: text) }
        }
        #expect(!NATSError.credentialsInURL.description.contains("hunter2"))
        #expect(NATSError.credentialsInURL.description.contains("CONTRAIL_NATS_PASSWORD"))
        // Positive control: the same URL without them parses.
        #expect(try NATSServerURL(parsing: "nats://127.0.0.1:4222") == NATSServerURL(host: "127.0.0.1", port: 4222))
    }
}

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct NATSAuthorizationTests {
    static let users = """
        authorization {
          users = [
            {user: "alice", password: "wonderland-42"}
          ]
        }
        """
    static let token = #"authorization { token: "s3cr3t-token-xyz" }"#

    func connect(_ nats: NATSServerProcess, _ credentials: NATSCredentials) async throws(NATSError) -> NATSConnection {
        var options = NATSOptions(servers: [nats.url])
        options.credentials = credentials
        options.connectTimeout = .seconds(10)
        return try await NATSConnection.connect(options)
    }

    func roundTrip(_ connection: NATSConnection) async throws {
        try await natsRoundTrip(connection)
    }

    @Test func aUserAndPasswordOpenANATSWithUsersAndAWrongPasswordIsATypedError() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.users)
        let connection = try await connect(nats, .userPassword(user: "alice", password: "wonderland-42"))
        #expect(await connection.serverInfo?.authRequired == true)
        try await roundTrip(connection)
        // JetStream works for that user too.
        let info = try await JetStream(connection: connection).createStream(StreamConfig(name: "AUTHED", subjects: ["authed.>"]))
        #expect(info.config.name == "AUTHED")
        await connection.close()

        for wrong in [NATSCredentials.userPassword(user: "alice", password: "wrong-password"), .none, .token("wonderland-42")] {
            do {
                let connection = try await connect(nats, wrong)
                Issue.record("connected with \(wrong)")
                await connection.close()
            } catch {
                guard case .authorizationFailed(let why) = error else { Issue.record("\(wrong): \(error)"); continue }
                #expect(why.contains("Authorization Violation"), "\(why)")
                #expect(!why.contains("wrong-password") && !why.contains("wonderland"), "\(why)")
            }
        }
        await nats.stop()
    }

    @Test func aTokenOpensANATSWithATokenAndAWrongTokenIsATypedError() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.token)
        let connection = try await connect(nats, .token("s3cr3t-token-xyz"))
        try await roundTrip(connection)
        await connection.close()
        await #expect(throws: NATSError.self) { _ = try await connect(nats, .token("not-the-token")) }
        do {
            _ = try await connect(nats, .token("not-the-token"))
        } catch {
            #expect(error.description.contains("refused the credentials") && error.description.contains("a token"), "\(error)")
        }
        await nats.stop()
    }

    /// Two cluster servers share a scope through a NATS that requires a password; a third with the
    /// wrong one refuses sessions with the reason, and its log never holds either password.
    @MainActor
    @Test func clusterServersJoinALockedNATSWithTheirCredentials() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.users)
        let lines = LogLines()
        func makeServer(_ credentials: NATSCredentials) throws -> ContrailServer {
            try clusterServer(nats) { options, cluster in
                options.log = { line in lines.append(line) }
                cluster.credentials = credentials
            }
        }
        let one = try makeServer(.userPassword(user: "alice", password: "wonderland-42"))
        let two = try makeServer(.userPassword(user: "alice", password: "wonderland-42"))
        let a = try await deckReplica(one.connector())
        let b = try await deckReplica(two.connector())
        a.1.title = "through a locked NATS"
        #expect(await eventually(.seconds(30)) { b.1.title == "through a locked NATS" })

        let locked = try makeServer(.userPassword(user: "alice", password: "wrong-password"))
        do {
            _ = try await deckReplica(locked.connector())
            Issue.record("a server with the wrong password opened a session")
        } catch {
            guard case .serverUnavailable(let message)? = error as? SyncError else { Issue.record("\(error)"); return }
            #expect(message.contains("refused the credentials"), "\(message)")
        }
        let logged = lines.all.joined(separator: "\n")
        #expect(logged.contains("refused the credentials"), "\(logged)")
        #expect(!logged.contains("wonderland-42") && !logged.contains("wrong-password"), "\(logged)")
        await a.0.close(); await b.0.close()
        await one.stop(); await two.stop(); await locked.stop(); await nats.stop()
    }

    /// `contrail serve --nats-credentials FILE` and `CONTRAIL_NATS_TOKEN`: a client syncs through
    /// the CLI server; a file every user may read is refused; the secret shows nowhere in its output.
    @MainActor
    @Test func contrailServeTakesTheCredentialsFromAFileOrTheEnvironment() async throws {
        let nats = try await NATSServerProcess.start(configuration: Self.token)
        let file = nats.storeDirectory + "/contrail-nats.env"
        try "CONTRAIL_NATS_TOKEN=s3cr3t-token-xyz\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let fromFile = try await ServeProcess.start(natsURL: nats.url.description, arguments: ["--nats-credentials", file])
        let fromEnvironment = try await ServeProcess.start(natsURL: nats.url.description,
                                                           environment: [NATSCredentials.tokenVariable: "s3cr3t-token-xyz"])
        let a = try await deckReplica(url: fromFile.url)
        let b = try await deckReplica(url: fromEnvironment.url)
        a.1.title = "via the CLI"
        #expect(await eventually(.seconds(30)) { b.1.title == "via the CLI" })
        await a.0.close(); await b.0.close()

        // Negative: a wrong token refuses sessions with the reason (logged without the token).
        let wrong = try await ServeProcess.start(natsURL: nats.url.description, environment: [NATSCredentials.tokenVariable: "not-the-token"],
                                                 quiet: false)
        await #expect(throws: SyncError.self) { _ = try await deckReplica(url: wrong.url) }
        #expect(await wrong.child.waitForOutput(containing: "refused the credentials"))
        #expect(!wrong.child.text.contains("not-the-token"))
        await wrong.kill()

        // Negative: a file every user may read is refused at startup, naming the fix.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        let refused = try ChildProcess(ServeProcess.binary, ["serve", "--port", "0", "--nats", nats.url.description,
                                                             "--nats-credentials", file])
        #expect(await refused.waitForExit())
        #expect(refused.text.contains("readable by every user"), "\(refused.text)")
        #expect(!refused.text.contains("s3cr3t"))
        // And one on the command line is no option: a URL with it is refused.
        let inURL = try ChildProcess(ServeProcess.binary, ["serve", "--port", "0", "--nats", "nats://x:s3cr3t-token-xyz@127.0.0.1"])
        #expect(await inURL.waitForExit())
        #expect(inURL.text.contains("CONTRAIL_NATS_TOKEN") && !inURL.text.contains("s3cr3t"), "\(inURL.text)")
        await fromFile.kill(); await fromEnvironment.kill(); await nats.stop()
    }
}

/// What the client sends a server that asks for credentials or TLS, seen by a fake server.
struct NATSHandshakeTests {
    /// A fake server on loopback that sends `info`, records what the client sends before its first
    /// `PING`, and answers it with `PONG`. Returns the port and the recorded text.
    func fakeServer(info: String) async throws -> (UInt16, Task<String, Never>, TCPServer) {
        let server = TCPServer()
        let port = try await server.start()
        let recorded = Task { () -> String in
            for await connection in server.connections {
                try? await connection.send(Array("INFO \(info)\r\n".utf8))
                var text = ""
                while let bytes = try? await connection.receive() {
                    text += String(decoding: bytes, as: UTF8.self)
                    if text.contains("PING\r\n") {
                        try? await connection.send(Array("PONG\r\n".utf8))
                        return text
                    }
                }
                return text
            }
            return ""
        }
        return (port, recorded, server)
    }

    @Test func credentialsGoInTheConnectLine() async throws {
        let info = #"{"server_id":"FAKE","version":"2.9.0","max_payload":1048576,"headers":true,"auth_required":true}"#
        for (credentials, fields) in [(NATSCredentials.userPassword(user: "alice", password: "p\"w"), [#""user":"alice""#, #""pass":"p\"w""#]),
                                      (.token("t0k"), [#""auth_token":"t0k""#])] {
            let (port, recorded, server) = try await fakeServer(info: info)
            var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port)])
            options.credentials = credentials
            options.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
            let connection = try await NATSConnection.connect(options)
            #expect(await connection.serverInfo?.authRequired == true)
            let sent = await recorded.value
            for field in fields { #expect(sent.contains(field), "\(sent)") }
            await connection.close()
            await server.stop()
        }
    }

    @Test func aServerThatRequiresTLSIsATypedError() async throws {
        let (port, _, server) = try await fakeServer(
            info: #"{"server_id":"FAKE","version":"2.9.0","max_payload":1048576,"headers":true,"tls_required":true}"#)
        func options(_ port: UInt16) -> NATSOptions {
            var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port)])
            options.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
            return options
        }
        await #expect(throws: NATSError.tlsRequired("nats://127.0.0.1:\(port)")) {
            _ = try await NATSConnection.connect(options(port))
        }
        await server.stop()
        // Positive control: the same server without tls_required is joined.
        let (open, _, openServer) = try await fakeServer(info: #"{"server_id":"FAKE","version":"2.9.0","max_payload":1048576,"headers":true}"#)
        let connection = try await NATSConnection.connect(options(open))
        #expect(await connection.status == .connected(NATSServerURL(host: "127.0.0.1", port: open)))
        await connection.close()
        await openServer.stop()
    }
}

/// Lines collected from several threads (a server's log sink).
final class LogLines: Sendable {
    private let lines = SanitizerVisibleMutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// The server answers what a connection publishes: the connection is past the handshake.
func natsRoundTrip(_ connection: NATSConnection) async throws {
    let subscription = try await connection.subscribe("auth.check")
    try await connection.publish("auth.check", payload: Array("hi".utf8))
    var iterator = subscription.messages.makeAsyncIterator()
    let message = try await withTimeout(.seconds(30)) { await iterator.next() }
    #expect(message?.payload == Array("hi".utf8))
}
