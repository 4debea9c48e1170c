import Contrail
import ContrailNATS
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// A fresh nkey of `role` from random bytes.
func randomNKey(_ role: NKey.Role) throws -> NKey {
    var generator = SystemRandomNumberGenerator()
    return try NKey(role: role, seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
}

/// A NATS JWT (v2, `ed25519-nkey`) with `claims` about `subject`, signed by `issuer`.
func natsJWT(_ type: String, subject: String, issuer: NKey, nats: [String: Any] = [:]) throws -> String {
    let header = NKey.base64URL(Array(#"{"typ":"JWT","alg":"ed25519-nkey"}"#.utf8))
    var natsClaims = nats
    natsClaims["type"] = type
    natsClaims["version"] = 2
    let claims: [String: Any] = ["jti": UUID().uuidString, "iat": Int(Date().timeIntervalSince1970), "iss": issuer.publicKey,
                                 "name": type, "sub": subject, "nats": natsClaims]
    let payload = NKey.base64URL(Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])))
    let input = header + "." + payload
    return input + "." + (try issuer.signature(Array(input.utf8)))
}

/// The text of a NATS `.creds` file, as `nsc` writes it.
func credsFile(jwt: String, seed: String) -> String {
    """
    -----BEGIN NATS USER JWT-----
    \(jwt)
    ------END NATS USER JWT------

    ************************* IMPORTANT *************************
    NKEY Seed printed below can be used to sign and prove identity.
    NKEYs are sensitive and should be treated as secrets.

    -----BEGIN USER NKEY SEED-----
    \(seed)
    ------END USER NKEY SEED------

    *************************************************************

    """
}

/// Operator-mode NATS (decentralised auth): an operator, one account with JetStream, its users.
struct OperatorSetup {
    let operatorKey: NKey
    let account: NKey
    let accountJWT: String
    /// The system account (JetStream needs one in operator mode).
    let system: NKey
    let systemJWT: String

    init() throws {
        operatorKey = try randomNKey(.operatorKey)
        account = try randomNKey(.account)
        system = try randomNKey(.account)
        systemJWT = try natsJWT("account", subject: system.publicKey, issuer: operatorKey)
        let limits: [String: Any] = ["subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true,
                                     "conn": -1, "leaf": -1, "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1]
        accountJWT = try natsJWT("account", subject: account.publicKey, issuer: operatorKey, nats: ["limits": limits])
    }

    /// A user of the account (or of `issuer`, to forge one) and its `.creds` text.
    func user(issuer: NKey? = nil) throws -> (NKey, String) {
        let user = try randomNKey(.user)
        let jwt = try natsJWT("user", subject: user.publicKey, issuer: issuer ?? account,
                              nats: ["pub": [String: Any](), "sub": [String: Any](), "subs": -1, "data": -1, "payload": -1])
        return (user, jwt)
    }

    /// A `nats-server` in operator mode trusting this operator, with the account preloaded.
    func start() async throws -> NATSServerProcess {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("contrail-nats-op-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let operatorJWT = try natsJWT("operator", subject: operatorKey.publicKey, issuer: operatorKey)
        try operatorJWT.write(toFile: store + "/operator.jwt", atomically: true, encoding: .utf8)
        try """
            operator: "\(store)/operator.jwt"
            resolver: MEMORY
            system_account: \(system.publicKey)
            resolver_preload: {
              \(account.publicKey): "\(accountJWT)"
              \(system.publicKey): "\(systemJWT)"
            }
            """.write(toFile: store + "/nats.conf", atomically: true, encoding: .utf8)
        return try await NATSServerProcess.start(storeDirectory: store, extra: ["-c", store + "/nats.conf"])
    }
}

/// nkeys: the text form, and a seed proving itself to `nats-server` by signing its nonce.
struct NKeyTests {
    @Test func aSeedRoundTripsAndBadTextIsATypedErrorWithoutTheText() throws {
        let key = try randomNKey(.user)
        #expect(key.seedText.hasPrefix("SU") && key.publicKey.hasPrefix("U"))
        #expect(key.publicKey.count == 56 && key.seedText.count == 58)
        let again = try NKey(seedText: "  " + key.seedText + "\n")
        #expect(again.publicKey == key.publicKey && again.role == .user)
        #expect(try randomNKey(.account).publicKey.hasPrefix("A"))
        #expect(try randomNKey(.operatorKey).seedText.hasPrefix("SO"))
        #expect(!"\(key)".contains(key.seedText) && "\(key)".contains(key.publicKey))

        var corrupted = Array(key.seedText)
        corrupted[20] = corrupted[20] == "A" ? "B" : "A"
        for bad in [String(corrupted), key.publicKey, "SUnot-base32!", ""] {
            do {
                _ = try NKey(seedText: bad)
                Issue.record("accepted \(bad)")
            } catch {
                guard case .invalidCredentials(let why) = error else { Issue.record("\(error)"); continue }
                #expect(bad.isEmpty || !why.contains(bad), "\(why)")
            }
        }
    }

    /// Signatures are Ed25519 (RFC 8032 test 1: the empty message under its seed).
    @Test func signaturesAreEd25519() throws {
        func bytes(_ hex: String) -> [UInt8] {
            stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
        }
        let key = try NKey(role: .user, seed: bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        let expected = bytes("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        #expect(try key.signature([]) == NKey.base64URL(expected))
        // Positive control of the comparison: another message signs differently.
        #expect(try key.signature([0]) != NKey.base64URL(expected))
    }

    @Test func credentialsFilesHoldASeedOrACredsFile() throws {
        let user = try randomNKey(.user)
        #expect(try NATSCredentials.parsing(user.seedText + "\n") == .nkey(seed: user.seedText))
        let account = try randomNKey(.account)
        let jwt = try natsJWT("user", subject: user.publicKey, issuer: account)
        #expect(try NATSCredentials.parsing(credsFile(jwt: jwt, seed: user.seedText)) == .userJWT(jwt: jwt, seed: user.seedText))
        for credentials in [NATSCredentials.nkey(seed: user.seedText), .userJWT(jwt: jwt, seed: user.seedText)] {
            var dumped = ""
            dump(credentials, to: &dumped)
            for text in ["\(credentials)", String(reflecting: credentials), dumped] {
                #expect(!text.contains(user.seedText) && !text.contains(jwt), "\(text)")
            }
        }
        // Negatives: a creds file without its seed, one whose seed is an account's, a corrupted seed.
        // The corrupted seed changes a data character in the middle (the last one also carries
        // padding bits, and may already be the replacement); CRC-16 catches every 5-bit burst.
        var corrupted = Array(user.seedText)
        corrupted[10] = corrupted[10] == "A" ? "B" : "A"
        let bad = [credsFile(jwt: jwt, seed: "").replacingOccurrences(of: "\n\n-----BEGIN USER NKEY SEED-----\n\n", with: "\n"),
                   credsFile(jwt: jwt, seed: account.seedText), String(corrupted)]
        for text in bad {
            #expect(throws: NATSError.self) { try NATSCredentials.parsing(text) }
        }
    }
}

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct NATSNKeyServerTests {
    func connect(_ nats: NATSServerProcess, _ credentials: NATSCredentials) async throws(NATSError) -> NATSConnection {
        var options = NATSOptions(servers: [nats.url])
        options.credentials = credentials
        options.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
        return try await NATSConnection.connect(options)
    }

    func roundTrip(_ connection: NATSConnection) async throws {
        try await natsRoundTrip(connection)
    }

    func refusal(_ nats: NATSServerProcess, _ credentials: NATSCredentials) async -> NATSError? {
        do {
            let connection = try await connect(nats, credentials)
            await connection.close()
            return nil
        } catch {
            return error
        }
    }

    @Test func anNKeySeedOpensANATSWithNKeyUsersAndAnotherSeedIsRefused() async throws {
        let alice = try randomNKey(.user)
        let mallory = try randomNKey(.user)
        let nats = try await NATSServerProcess.start(configuration: "authorization { users = [ {nkey: \"\(alice.publicKey)\"} ] }")
        let connection = try await connect(nats, .nkey(seed: alice.seedText))
        #expect(await connection.serverInfo?.nonce?.isEmpty == false)
        try await roundTrip(connection)
        let info = try await JetStream(connection: connection).createStream(StreamConfig(name: "NKEYED", subjects: ["nkeyed.>"]))
        #expect(info.config.name == "NKEYED")
        await connection.close()
        for wrong in [NATSCredentials.nkey(seed: mallory.seedText), .none] {
            guard case .authorizationFailed(let why)? = await refusal(nats, wrong) else {
                Issue.record("\(wrong) not refused")
                continue
            }
            #expect(!why.contains(mallory.seedText), "\(why)")
        }
        await nats.stop()
    }

    @Test func aCredsFileOpensAnOperatorModeNATSAndAForgedJWTOrWrongSeedIsRefused() async throws {
        let setup = try OperatorSetup()
        let nats = try await setup.start()
        let (user, jwt) = try setup.user()
        let credentials = try NATSCredentials.parsing(credsFile(jwt: jwt, seed: user.seedText))
        let connection = try await connect(nats, credentials)
        try await roundTrip(connection)
        await connection.close()
        // A JWT signed by an account the operator does not know.
        let (forged, forgedJWT) = try setup.user(issuer: try randomNKey(.account))
        guard case .authorizationFailed? = await refusal(nats, .userJWT(jwt: forgedJWT, seed: forged.seedText)) else {
            Issue.record("a forged JWT was not refused")
            return
        }
        // The right JWT with another user's seed: the nonce's signature does not match the JWT's key.
        guard case .authorizationFailed? = await refusal(nats, .userJWT(jwt: jwt, seed: try randomNKey(.user).seedText)) else {
            Issue.record("a wrong seed was not refused")
            return
        }
        await nats.stop()
    }

    /// `contrail serve --nats-credentials` with a `.creds` file: two servers share a scope through an
    /// operator-mode NATS (JetStream in the account); the same file readable by others is refused.
    @MainActor
    @Test func contrailServeJoinsAnOperatorModeNATSWithACredsFile() async throws {
        let setup = try OperatorSetup()
        let nats = try await setup.start()
        let (user, jwt) = try setup.user()
        let file = nats.storeDirectory + "/contrail.creds"
        try credsFile(jwt: jwt, seed: user.seedText).write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let one = try await ServeProcess.start(natsURL: nats.url.description, arguments: ["--nats-credentials", file])
        let two = try await ServeProcess.start(natsURL: nats.url.description, arguments: ["--nats-credentials", file])
        let a = try await deckReplica(url: one.url)
        let b = try await deckReplica(url: two.url)
        a.1.title = "through an operator-mode NATS"
        #expect(await eventually(.seconds(30)) { b.1.title == "through an operator-mode NATS" })
        await a.0.close(); await b.0.close()
        #expect(!one.child.text.contains(user.seedText))

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        let refused = try ChildProcess(ServeProcess.binary, ["serve", "--port", "0", "--nats", nats.url.description,
                                                             "--nats-credentials", file])
        #expect(await refused.waitForExit())
        #expect(refused.text.contains("readable by every user") && !refused.text.contains(user.seedText), "\(refused.text)")
        await one.kill(); await two.kill(); await nats.stop()
    }
}

/// `handshake_first` NATS servers (`tls { handshake_first: true }`): TLS before `INFO`.
@Suite(.timeLimit(.minutes(5)))
struct NATSTLSFirstTests {
    /// A fake server that expects the TLS handshake before anything, then sends `INFO` and answers
    /// each `PING` with `PONG` (what nats-server 2.10's `handshake_first` does): a plain fake NATS
    /// that greets at once, behind the Python TLS terminator (which connects to it only after the
    /// client's TLS handshake). Returns the terminator's port.
    func tlsFirstServer() async throws -> (UInt16, TCPServer, ChildProcess) {
        let server = TCPServer()
        let backend = try await server.start()
        let info = #"{"server_id":"FAKE","version":"2.10.7","max_payload":1048576,"headers":true,"tls_required":true}"#
        Task {
            for await connection in server.connections {
                Task {
                    try? await connection.send(Array("INFO \(info)\r\n".utf8))
                    var text = ""
                    while let bytes = try? await connection.receive() {
                        text += String(decoding: bytes, as: UTF8.self)
                        if text.contains("PING\r\n") {
                            text = ""
                            try? await connection.send(Array("PONG\r\n".utf8))
                        }
                    }
                }
            }
        }
        let (terminator, ports) = try await TLSFixtures.terminator(backendPort: backend, certificates: ["server"])
        return (ports["server"]!, server, terminator)
    }

    func options(_ port: UInt16, first: Bool) -> NATSOptions {
        var options = NATSOptions(servers: [NATSServerURL(host: "127.0.0.1", port: port, isSecure: true)])
        options.tls = TLSClientConfiguration(caBundlePath: TLSFixtures.path("ca.pem"))
        options.tlsHandshakeFirst = first
        options.connectTimeout = .seconds(3)  // the negative waits this long for an INFO that never comes
        return options
    }

    @Test func aTLSFirstClientConnectsAndAPlainFirstClientGetsNoINFO() async throws {
        let (port, server, terminator) = try await tlsFirstServer()
        var first = options(port, first: true)
        first.connectTimeout = .seconds(30)  // a bound for a loaded machine, not what is tested
        let connection = try await NATSConnection.connect(first)
        #expect(await connection.serverInfo?.version == "2.10.7")
        try await connection.flush(timeout: .seconds(30))
        await connection.close()
        // A client that waits for INFO before TLS never gets one.
        do {
            let connection = try await NATSConnection.connect(options(port, first: false))
            Issue.record("connected without TLS first")
            await connection.close()
        } catch {
            guard case .connectionFailed = error else { Issue.record("\(error)"); return }
        }
        await terminator.kill()
        await server.stop()
    }

    /// Against a real `nats-server` with `handshake_first` (2.10.4 or later; the one installed here
    /// may be older, then this is skipped: the fake server above covers the client).
    @Test(.enabled(if: NATSTLSFirstTests.serverSupportsHandshakeFirst, "nats-server older than 2.10.4 has no handshake_first"))
    func aHandshakeFirstNATSServerIsJoinedTLSFirstAndRefusesAPlainStart() async throws {
        let nats = try await NATSServerProcess.start(configuration: """
            tls {
              cert_file: "\(TLSFixtures.path("server.pem"))"
              key_file: "\(TLSFixtures.path("server-key.pem"))"
              handshake_first: true
            }
            """)
        var first = options(nats.port, first: true)
        first.connectTimeout = .seconds(30)
        let connection = try await NATSConnection.connect(first)
        try await connection.flush(timeout: .seconds(30))
        await connection.close()
        await #expect(throws: NATSError.self) { _ = try await NATSConnection.connect(options(nats.port, first: false)) }
        await nats.stop()
    }

    /// Whether the installed nats-server knows `handshake_first` (2.10.4 or later).
    static let serverSupportsHandshakeFirst: Bool = {
        guard !NATSServerProcess.skipped, let executable = NATSServerProcess.executable else { return false }
        // Blocking, once, while Swift Testing evaluates traits (not on an event loop).
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--version"]
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return false }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let version = output.split(separator: "v").last.map { $0.split(separator: ".").compactMap { Int($0.prefix { $0.isNumber }) } } ?? []
        return version.count >= 3 && (version[0], version[1], version[2]) >= (2, 10, 4)
    }()
}
