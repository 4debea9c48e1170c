import ContrailServer
import ContrailWire
import Foundation
import Testing

/// `JWTVerifier` against tokens signed by the `openssl` CLI: every accepted shape, and every
/// refusal next to an accepted token that differs only in what is refused.
@Suite("JWT verification", .serialized)
struct JWTVerifierTests {
    static let claims: JSON = ["sub": "alice", "scopes": ["board-17": "r", "notes-*": "rw"], "admin": true]

    @Test func everyAlgorithmVerifiesItsOwnTokensAndCarriesTheClaims() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        let verifiers: [(JWTVerifier, JWTTestKeys.Signing, String)] = [
            (try await JWTTestKeys.verifier(keys.secretFile), .hs256(secret: keys.secret), "HS256"),
            (try await JWTTestKeys.verifier(keys.ecPublic), .es256, "ES256"),
            (try await JWTTestKeys.verifier(keys.rsaPublic), .rs256, "RS256"),
        ]
        for (verifier, signing, algorithm) in verifiers {
            #expect(verifier.algorithm == algorithm)
            let identity = try verifier.identity(fromToken: try await keys.token(Self.claims, signing: signing))
            #expect(identity.user == "alice")
            #expect(identity.isAdmin)
            #expect(identity.may(.read, "board-17") && !identity.may(.write, "board-17"))
            #expect(identity.may(.write, "notes-alice") && !identity.may(.read, "board-18"))
            #expect(identity.expiry == nil)
        }
    }

    @Test func noneAndAlgorithmConfusionAreRefused() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        let rsa = try await JWTTestKeys.verifier(keys.rsaPublic)
        let ec = try await JWTTestKeys.verifier(keys.ecPublic)
        let hs = try await JWTTestKeys.verifier(keys.secretFile)
        // alg none, unsigned; and alg none with a (meaningless) signature part.
        let unsigned = try await keys.token(Self.claims, signing: .unsigned)
        #expect(throws: JWTError.unsupportedAlgorithm("none")) { try rsa.identity(fromToken: unsigned) }
        #expect(throws: JWTError.unsupportedAlgorithm("none")) { try hs.identity(fromToken: unsigned + "AAAA") }
        // The classic confusion: an HS256 token whose HMAC key is the server's public key file.
        let rsaPEM = Array(try Data(contentsOf: keys.rsaPublic))
        let confused = try await keys.token(Self.claims, signing: .hs256(secret: rsaPEM))
        #expect(throws: JWTError.algorithmMismatch(token: "HS256", key: "RS256")) { try rsa.identity(fromToken: confused) }
        let ecPEM = Array(try Data(contentsOf: keys.ecPublic))
        let confusedEC = try await keys.token(Self.claims, signing: .hs256(secret: ecPEM))
        #expect(throws: JWTError.algorithmMismatch(token: "HS256", key: "ES256")) { try ec.identity(fromToken: confusedEC) }
        // And the other way round: RS and ES tokens for an HS secret, ES for RS.
        let rs256 = try await keys.token(Self.claims, signing: .rs256)
        #expect(throws: JWTError.algorithmMismatch(token: "RS256", key: "HS256")) { try hs.identity(fromToken: rs256) }
        let es256 = try await keys.token(Self.claims, signing: .es256)
        #expect(throws: JWTError.algorithmMismatch(token: "ES256", key: "RS256")) { try rsa.identity(fromToken: es256) }
        #expect(try ec.identity(fromToken: es256).user == "alice")
        // Positive control: the RS256 token verifies with the RSA key.
        #expect(try rsa.identity(fromToken: rs256).user == "alice")
        // An unknown algorithm.
        let hs512 = try await keys.token(Self.claims, signing: .hs256(secret: keys.secret), header: ["alg": "HS512"])
        #expect(throws: JWTError.unsupportedAlgorithm("HS512")) { try hs.identity(fromToken: hs512) }
    }

    @Test func badSignaturesAndMalformedTokensAreRefused() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        for (file, signing) in [(keys.secretFile, JWTTestKeys.Signing.hs256(secret: keys.secret)), (keys.ecPublic, .es256), (keys.rsaPublic, .rs256)] {
            let verifier = try await JWTTestKeys.verifier(file)
            let good = try await keys.token(Self.claims, signing: signing)
            #expect(try verifier.identity(fromToken: good).user == "alice")
            let parts = good.split(separator: ".").map(String.init)
            // Another payload under the same signature.
            let forgedPayload = JWTTestKeys.base64URL(Array(#"{"sub":"mallory","scopes":{"*":"rw"}}"#.utf8))
            #expect(throws: JWTError.badSignature) { try verifier.identity(fromToken: "\(parts[0]).\(forgedPayload).\(parts[2])") }
            // One flipped signature character; a truncated signature.
            var signature = Array(parts[2])
            signature[4] = signature[4] == "A" ? "B" : "A"
            #expect(throws: JWTError.badSignature) { try verifier.identity(fromToken: "\(parts[0]).\(parts[1]).\(String(signature))") }
            #expect(throws: JWTError.badSignature) { try verifier.identity(fromToken: "\(parts[0]).\(parts[1]).\(parts[2].dropLast(8))") }
            // A signature of another key of the same kind.
            let other = try await keys.token(Self.claims, signing: .hs256(secret: Array("another-secret-of-at-least-32-bytes-long!".utf8)))
            if case .hs256 = signing {
                #expect(throws: JWTError.badSignature) { try verifier.identity(fromToken: other) }
            }
        }
        let verifier = try await JWTTestKeys.verifier(keys.secretFile)
        let malformed = ["", "abc", "a.b", "a.b.c.d", "!!!.e30.AAAA", "e30.e30.AAAA", "bm90IGpzb24.e30.AAAA",
                         String(repeating: "A", count: 20_000)]
        for token in malformed {
            #expect(throws: JWTError.self) { try verifier.identity(fromToken: token) }
            do { _ = try verifier.identity(fromToken: token) } catch {
                guard case .malformed = error else { Issue.record("\(token.prefix(20)): \(error)"); continue }
                #expect(!error.description.contains(token) || token.count < 4, "the reason never repeats the token")
            }
        }
        let crit = try await keys.token(Self.claims, signing: .hs256(secret: keys.secret), header: ["crit": ["exp"]])
        #expect(throws: JWTError.unsupportedCritical) { try verifier.identity(fromToken: crit) }
    }

    @Test func expiryAndNotBeforeHoldWithAThirtySecondLeeway() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        let verifier = try await JWTTestKeys.verifier(keys.ecPublic)
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        func token(_ extra: [String: JSON]) async throws -> String {
            let base: [String: JSON] = ["sub": "alice"]
            return try await keys.token(.object(base.merging(extra) { $1 }), signing: .es256)
        }
        let expired = try await token(["exp": .int(2_000_000_000 - 31)])
        #expect(throws: JWTError.expired) { try verifier.identity(fromToken: expired, now: now) }
        let withinLeeway = try await token(["exp": .int(2_000_000_000 - 29)])
        let identity = try verifier.identity(fromToken: withinLeeway, now: now)
        #expect(identity.expiry == Date(timeIntervalSince1970: 2_000_000_000 - 29 + 30), "a session ends at exp + leeway")
        let early = try await token(["nbf": .int(2_000_000_000 + 31)])
        #expect(throws: JWTError.notYetValid) { try verifier.identity(fromToken: early, now: now) }
        let lateEnough = try await token(["nbf": .int(2_000_000_000 + 29)])
        #expect(try verifier.identity(fromToken: lateEnough, now: now).user == "alice")
        // Claims of the wrong shape.
        let shapes: [([String: JSON], String)] = [(["exp": "tomorrow"], "exp"), (["scopes": ["a": "w"]], "scopes['a']"),
                                                  (["scopes": ["a", "b"]], "scopes"), (["admin": "yes"], "admin")]
        for (claims, reason) in shapes {
            let bad = try await token(claims)
            #expect(throws: JWTError.self) { try verifier.identity(fromToken: bad, now: now) }
            do { _ = try verifier.identity(fromToken: bad, now: now) } catch {
                guard case .invalidClaim(let text) = error else { Issue.record("\(error)"); continue }
                #expect(text.hasPrefix(reason))
            }
        }
        let anonymous = try await keys.token(["scopes": ["*": "rw"]], signing: .es256)
        #expect(throws: JWTError.invalidClaim("sub must be a non-empty string")) { try verifier.identity(fromToken: anonymous, now: now) }
    }

    @Test func keysThatCannotVerifyAreRefusedWithAReason() async throws {
        let keys = try await JWTTestKeys.make()
        defer { keys.remove() }
        _ = try await JWTTestKeys.verifier(keys.ecPublic)  // OpenSSL is loaded (off the pool) before the calls below
        #expect(throws: JWTVerifier.KeyError.self) { try JWTVerifier(key: Array("short".utf8)) }
        #expect(throws: JWTVerifier.KeyError.self) { try JWTVerifier(keyFile: keys.ecPrivate) }
        #expect(throws: JWTVerifier.KeyError.self) { try JWTVerifier(key: Array("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".utf8)) }
        try await JWTTestKeys.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out",
                                       keys.directory.appending(path: "small.pem").path(percentEncoded: false)])
        try await JWTTestKeys.openssl(["pkey", "-in", keys.directory.appending(path: "small.pem").path(percentEncoded: false), "-pubout",
                                       "-out", keys.directory.appending(path: "small.pub").path(percentEncoded: false)])
        #expect(throws: JWTVerifier.KeyError.self) { try JWTVerifier(keyFile: keys.directory.appending(path: "small.pub")) }
        // A 256-bit curve that is not P-256 (secp256k1: ES256K, not ES256).
        let k1 = keys.directory.appending(path: "k1.pem").path(percentEncoded: false)
        let k1Public = keys.directory.appending(path: "k1.pub.pem")
        try await JWTTestKeys.openssl(["ecparam", "-name", "secp256k1", "-genkey", "-noout", "-out", k1])
        try await JWTTestKeys.openssl(["ec", "-in", k1, "-pubout", "-out", k1Public.path(percentEncoded: false)])
        let k1Error = #expect(throws: JWTVerifier.KeyError.self) { try JWTVerifier(keyFile: k1Public) }
        #expect(k1Error?.description == "an EC key on curve secp256k1 is not P-256 (ES256)")
        #expect(try JWTVerifier(keyFile: keys.ecPublic).algorithm == "ES256")
        #expect(try JWTVerifier(key: Array(String(repeating: "k", count: 32).utf8)).algorithm == "HS256")
    }

    @Test func theTokenComesFromParamsOrABearerHeader() {
        #expect(JWTVerifier.token(params: ["token": "p"], headers: [("Authorization", "Bearer h")]) == "p")
        #expect(JWTVerifier.token(params: [:], headers: [("authorization", "bearer  h ")]) == "h")
        #expect(JWTVerifier.token(params: [:], headers: [("Authorization", "Basic h")]) == nil)
        #expect(JWTVerifier.token(params: ["token": 5], headers: []) == nil)
    }
}
