import ContrailServer
import ContrailTestSupport
import ContrailWire
import Foundation

/// Keys made with the `openssl` CLI at test time (a P-256 and an RSA-2048 pair, an HS256 secret) in a
/// fresh temporary directory, and tokens signed with them the same way: the signing side is OpenSSL's
/// command line, independent of the verifier under test.
struct JWTTestKeys: Sendable {
    let directory: URL
    let secret: [UInt8]

    var ecPrivate: URL { directory.appending(path: "ec.pem") }
    var ecPublic: URL { directory.appending(path: "ec.pub.pem") }
    var rsaPrivate: URL { directory.appending(path: "rsa.pem") }
    var rsaPublic: URL { directory.appending(path: "rsa.pub.pem") }
    var secretFile: URL { directory.appending(path: "hs256.secret") }

    static func make() async throws -> JWTTestKeys {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keys = JWTTestKeys(directory: directory, secret: Array("an-hs256-secret-of-more-than-32-bytes-\(UUID().uuidString)".utf8))
        try Data(keys.secret + [10]).write(to: keys.secretFile)
        try await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keys.ecPrivate.path(percentEncoded: false)])
        try await openssl(["ec", "-in", keys.ecPrivate.path(percentEncoded: false), "-pubout", "-out", keys.ecPublic.path(percentEncoded: false)])
        try await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keys.rsaPrivate.path(percentEncoded: false)])
        try await openssl(["pkey", "-in", keys.rsaPrivate.path(percentEncoded: false), "-pubout", "-out", keys.rsaPublic.path(percentEncoded: false)])
        return keys
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// A verifier for `file`, made on a thread of its own: the first one loads OpenSSL (dlopen),
    /// which must not block the cooperative pool.
    static func verifier(_ file: URL) async throws -> JWTVerifier {
        try await offPool { try JWTVerifier(keyFile: file) }
    }

    /// Runs `body` on a new thread (for blocking calls) and returns its result.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// How a test token is signed.
    enum Signing {
        case hs256(secret: [UInt8])
        case es256
        case rs256
        /// No signature part (for `alg: none`).
        case unsigned
    }

    /// A token with `header` (alg defaults to the signing's) and `claims`.
    func token(_ claims: JSON, signing: Signing, header: [String: JSON] = [:]) async throws -> String {
        var fullHeader: [String: JSON] = ["typ": "JWT"]
        switch signing {
        case .hs256: fullHeader["alg"] = "HS256"
        case .es256: fullHeader["alg"] = "ES256"
        case .rs256: fullHeader["alg"] = "RS256"
        case .unsigned: fullHeader["alg"] = "none"
        }
        fullHeader.merge(header) { $1 }
        let input = Self.base64URL(Array(JSON.object(fullHeader).jsonString.utf8)) + "." + Self.base64URL(Array(claims.jsonString.utf8))
        let inputFile = directory.appending(path: "input-\(UUID().uuidString)")
        let signatureFile = directory.appending(path: "sig-\(UUID().uuidString)")
        try Data(input.utf8).write(to: inputFile)
        switch signing {
        case .unsigned: return input + "."
        case .hs256(let secret):
            let hex = secret.map { String(format: "%02x", $0) }.joined()
            try await Self.openssl(["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hex)", "-binary", "-out", signatureFile.path(percentEncoded: false), inputFile.path(percentEncoded: false)])
        case .es256:
            try await Self.openssl(["dgst", "-sha256", "-sign", ecPrivate.path(percentEncoded: false), "-binary", "-out", signatureFile.path(percentEncoded: false), inputFile.path(percentEncoded: false)])
        case .rs256:
            try await Self.openssl(["dgst", "-sha256", "-sign", rsaPrivate.path(percentEncoded: false), "-binary", "-out", signatureFile.path(percentEncoded: false), inputFile.path(percentEncoded: false)])
        }
        var signature = Array(try Data(contentsOf: signatureFile))
        if case .es256 = signing { signature = try Self.rawECDSA(der: signature) }
        return input + "." + Self.base64URL(signature)
    }

    /// A token of `user` with `scopes` (pattern → "r"/"rw"), valid for an hour unless `exp` is given.
    func token(user: String, scopes: [String: String], admin: Bool = false, exp: Date? = nil, signing: Signing = .es256) async throws -> String {
        var claims: [String: JSON] = ["sub": .string(user), "exp": .int(Int64((exp ?? Date().addingTimeInterval(3600)).timeIntervalSince1970)),
                                      "scopes": .object(scopes.mapValues(JSON.string))]
        if admin { claims["admin"] = true }
        return try await token(.object(claims), signing: signing)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// JOSE's `r‖s` (32 bytes each) from OpenSSL's DER `SEQUENCE { INTEGER r, INTEGER s }`.
    static func rawECDSA(der: [UInt8]) throws -> [UInt8] {
        guard der.count > 8, der[0] == 0x30 else { throw TestFailure("not a DER ECDSA signature") }
        var position = 2
        var result: [UInt8] = []
        for _ in 0..<2 {
            guard der[position] == 0x02 else { throw TestFailure("not a DER INTEGER") }
            let length = Int(der[position + 1])
            var value = Array(der[(position + 2)..<(position + 2 + length)])
            while value.count > 32, value.first == 0 { value.removeFirst() }
            result += [UInt8](repeating: 0, count: 32 - value.count) + value
            position += 2 + length
        }
        return result
    }

    @discardableResult
    static func openssl(_ arguments: [String]) async throws -> String {
        let child = try ChildProcess(URL(filePath: "/usr/bin/openssl"), arguments)
        guard await child.waitForExit(timeout: .seconds(60)), await child.waitForOutputToEnd() else {
            await child.kill()
            throw TestFailure("openssl \(arguments.first ?? "") did not finish")
        }
        guard case .exited(0)? = child.termination else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) failed: \(child.text)")
        }
        return child.text
    }
}
