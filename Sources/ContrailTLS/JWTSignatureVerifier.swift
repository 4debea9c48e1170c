/// Checks the signature of a JSON Web Token (RFC 7515/7518) with OpenSSL's libcrypto, loaded at run
/// time through ``OpenSSLLibrary``: HS256 with a shared secret, ES256 with a P-256 public key, RS256
/// with an RSA public key (2048 bits or more). The key decides the one algorithm it verifies, so a
/// token naming another (an HS256 token given to an RSA key, say) is refused before any crypto runs.
///
/// Thread-safe: the key is read-only after `init`, and each verification uses its own context.
package final class JWTSignatureVerifier: @unchecked Sendable {
    // Invariant for @unchecked Sendable: every stored property is immutable after init; the
    // EVP_PKEY is only read (OpenSSL 3 allows concurrent verifications with one key) and freed in
    // deinit, when no verification can be running.

    /// The algorithm this key verifies: `HS256`, `ES256` or `RS256`.
    package let algorithm: String
    private let secret: [UInt8]
    private let publicKey: OpaquePointer?
    private let functions: Functions

    private typealias EVPPKEYFree = @convention(c) (OpaquePointer?) -> Void

    /// The libcrypto functions verification calls, resolved once.
    private struct Functions {
        let sha256: @convention(c) () -> OpaquePointer?
        let hmac: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32, UnsafePointer<UInt8>?, Int,
                                  UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?) -> UnsafeMutablePointer<UInt8>?
        let memcmp: @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, Int) -> Int32
        let contextNew: @convention(c) () -> OpaquePointer?
        let contextFree: @convention(c) (OpaquePointer?) -> Void
        let verifyInit: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?,
                                        OpaquePointer?) -> Int32
        let verify: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32
        let keyFree: EVPPKEYFree
        let clearErrors: @convention(c) () -> Void

        init(_ library: OpenSSLLibrary) throws(OpenSSLUnavailable) {
            sha256 = try library.symbol("EVP_sha256", as: (@convention(c) () -> OpaquePointer?).self)
            hmac = try library.symbol("HMAC", as: (@convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32, UnsafePointer<UInt8>?, Int,
                                                                   UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?)
                                                     -> UnsafeMutablePointer<UInt8>?).self)
            memcmp = try library.symbol("CRYPTO_memcmp", as: (@convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, Int) -> Int32).self)
            contextNew = try library.symbol("EVP_MD_CTX_new", as: (@convention(c) () -> OpaquePointer?).self)
            contextFree = try library.symbol("EVP_MD_CTX_free", as: (@convention(c) (OpaquePointer?) -> Void).self)
            verifyInit = try library.symbol("EVP_DigestVerifyInit", as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?,
                                                                                         OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32).self)
            verify = try library.symbol("EVP_DigestVerify", as: (@convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int,
                                                                                 UnsafePointer<UInt8>?, Int) -> Int32).self)
            keyFree = try library.symbol("EVP_PKEY_free", as: EVPPKEYFree.self)
            clearErrors = try library.symbol("ERR_clear_error", as: (@convention(c) () -> Void).self)
        }
    }

    /// Why a key file cannot verify tokens.
    package enum KeyError: Error, Equatable, CustomStringConvertible {
        /// OpenSSL 3 could not be loaded.
        case cryptoUnavailable(String)
        /// The file holds a PEM block that is not a usable public key.
        case unusableKey(String)
        /// The file is neither a PEM public key nor a secret of at least 32 bytes.
        case weakSecret(bytes: Int)

        package var description: String {
            switch self {
            case .cryptoUnavailable(let reason): return reason
            case .unusableKey(let reason): return reason
            case .weakSecret(let bytes): return "an HS256 secret needs at least 32 bytes (this one has \(bytes))"
            }
        }
    }

    /// A verifier for `key`: the contents of a key file. A PEM `PUBLIC KEY` block is an ES256 (P-256)
    /// or RS256 (RSA ≥ 2048 bits) key; anything else is an HS256 secret (trailing newlines removed),
    /// of at least 32 bytes. Loads OpenSSL (blocking: call while configuring, off the event loops).
    package init(key: [UInt8]) throws(KeyError) {
        let library: OpenSSLLibrary
        do {
            library = try OpenSSLLibrary.shared()
            functions = try Functions(library)
        } catch {
            throw .cryptoUnavailable(error.reason)
        }
        let text = String(decoding: key, as: UTF8.self)
        guard text.contains("-----BEGIN") else {
            var secret = key
            while let last = secret.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { secret.removeLast() }
            guard secret.count >= 32 else { throw .weakSecret(bytes: secret.count) }
            self.secret = secret
            self.publicKey = nil
            self.algorithm = "HS256"
            return
        }
        guard text.contains("-----BEGIN PUBLIC KEY-----") else {
            throw .unusableKey("the PEM file holds no PUBLIC KEY block (a private key or certificate is not accepted: give the public key)")
        }
        let (publicKey, algorithm) = try Self.readPublicKey(key, library: library, functions: functions)
        self.secret = []
        self.publicKey = publicKey
        self.algorithm = algorithm
    }

    deinit {
        if let publicKey { functions.keyFree(publicKey) }
    }

    private static func readPublicKey(_ pem: [UInt8], library: OpenSSLLibrary, functions: Functions) throws(KeyError)
        -> (OpaquePointer, String)
    {
        typealias NewBuffer = @convention(c) (UnsafeRawPointer?, Int32) -> OpaquePointer?
        typealias FreeBIO = @convention(c) (OpaquePointer?) -> Int32
        typealias ReadKey = @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, UnsafeMutableRawPointer?)
            -> OpaquePointer?
        typealias KeyInt = @convention(c) (OpaquePointer?) -> Int32
        typealias StringParameter = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int,
                                                    UnsafeMutablePointer<Int>?) -> Int32
        let newBuffer: NewBuffer, freeBIO: FreeBIO, readKey: ReadKey, baseID: KeyInt, bits: KeyInt, stringParameter: StringParameter
        do {
            stringParameter = try library.symbol("EVP_PKEY_get_utf8_string_param", as: StringParameter.self)
            newBuffer = try library.symbol("BIO_new_mem_buf", as: NewBuffer.self)
            freeBIO = try library.symbol("BIO_free", as: FreeBIO.self)
            readKey = try library.symbol("PEM_read_bio_PUBKEY", as: ReadKey.self)
            baseID = try library.symbol("EVP_PKEY_get_base_id", as: KeyInt.self)
            bits = try library.symbol("EVP_PKEY_get_bits", as: KeyInt.self)
        } catch {
            throw .cryptoUnavailable(error.reason)
        }
        let key: OpaquePointer? = pem.withUnsafeBytes { buffer in
            guard let bio = newBuffer(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { _ = freeBIO(bio) }
            return readKey(bio, nil, nil, nil)
        }
        functions.clearErrors()
        guard let key else { throw .unusableKey("OpenSSL could not read the PEM public key") }
        let rsa: Int32 = 6  // EVP_PKEY_RSA
        let ec: Int32 = 408  // EVP_PKEY_EC
        // The curve's name ("group"): ES256 is P-256 only, not any 256-bit curve (secp256k1 is ES256K).
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        let named = stringParameter(key, "group", &group, group.count, &groupLength) == 1
        let curve = named ? String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        switch (baseID(key), bits(key)) {
        case (ec, 256) where curve == "prime256v1" || curve == "P-256": return (key, "ES256")
        case (ec, _) where !curve.isEmpty:
            functions.keyFree(key)
            functions.clearErrors()
            throw .unusableKey("an EC key on curve \(curve) is not P-256 (ES256)")
        case (rsa, let size) where size >= 2048: return (key, "RS256")
        case (rsa, let size):
            functions.keyFree(key)
            throw .unusableKey("an RSA key of \(size) bits is too small for RS256 (2048 or more)")
        case (ec, let size):
            functions.keyFree(key)
            throw .unusableKey("an EC key of \(size) bits is not P-256 (ES256)")
        case (let other, _):
            functions.keyFree(key)
            throw .unusableKey("key type \(other) is neither RSA nor EC P-256")
        }
    }

    /// Whether `signature` is this key's signature over `signingInput` (the token's
    /// `header.payload` text) with ``algorithm``. ES256 signatures are JOSE's raw `r‖s` (64 bytes).
    /// O(input length).
    package func verify(signingInput: [UInt8], signature: [UInt8]) -> Bool {
        if publicKey == nil { return verifyHMAC(signingInput, signature) }
        let encoded: [UInt8]
        if algorithm == "ES256" {
            guard signature.count == 64, let der = Self.derSignature(r: signature[0..<32], s: signature[32..<64]) else { return false }
            encoded = der
        } else {
            encoded = signature
        }
        guard let context = functions.contextNew() else { return false }
        defer {
            functions.contextFree(context)
            functions.clearErrors()
        }
        guard functions.verifyInit(context, nil, functions.sha256(), nil, publicKey) == 1 else { return false }
        return encoded.withUnsafeBufferPointer { sig in
            signingInput.withUnsafeBufferPointer { input in
                functions.verify(context, sig.baseAddress, sig.count, input.baseAddress, input.count) == 1
            }
        }
    }

    private func verifyHMAC(_ input: [UInt8], _ signature: [UInt8]) -> Bool {
        guard signature.count == 32 else { return false }
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let done = secret.withUnsafeBytes { key in
            input.withUnsafeBufferPointer { data in
                functions.hmac(functions.sha256(), key.baseAddress, Int32(key.count), data.baseAddress, data.count, &digest, &length)
            }
        }
        defer { functions.clearErrors() }
        guard done != nil, length == 32 else { return false }
        return functions.memcmp(digest, signature, 32) == 0
    }

    /// The DER `SEQUENCE { INTEGER r, INTEGER s }` OpenSSL expects for an ECDSA signature, from
    /// JOSE's fixed-width big-endian `r` and `s`; nil for a zero integer (never a valid signature).
    static func derSignature(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8]? {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
            let trimmed = bytes.drop { $0 == 0 }
            guard let first = trimmed.first else { return nil }
            let body = (first & 0x80) != 0 ? [0] + trimmed : Array(trimmed)
            return [0x02, UInt8(body.count)] + body
        }
        guard let r = integer(r), let s = integer(s) else { return nil }
        return [0x30, UInt8(r.count + s.count)] + r + s
    }
}
