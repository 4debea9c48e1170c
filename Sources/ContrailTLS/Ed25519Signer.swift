/// Signs with an Ed25519 private key (RFC 8032) through OpenSSL's libcrypto, loaded at run time
/// through ``OpenSSLLibrary``: what NATS nkeys need to answer a server's nonce.
///
/// Thread-safe: the key is read-only after `init`, and each signature uses its own context.
package final class Ed25519Signer: @unchecked Sendable {
    // Invariant for @unchecked Sendable: every stored property is immutable after init; the
    // EVP_PKEY is only read (OpenSSL 3 allows concurrent signatures with one key) and freed in
    // deinit, when no signature can be running.

    /// The 32-byte public key of the seed.
    package let publicKey: [UInt8]
    private let key: OpaquePointer
    private let functions: Functions

    /// The libcrypto functions signing calls, resolved once.
    private struct Functions {
        let newRawPrivateKey: @convention(c) (Int32, OpaquePointer?, UnsafePointer<UInt8>?, Int) -> OpaquePointer?
        let rawPublicKey: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?) -> Int32
        let keyFree: @convention(c) (OpaquePointer?) -> Void
        let contextNew: @convention(c) () -> OpaquePointer?
        let contextFree: @convention(c) (OpaquePointer?) -> Void
        let signInit: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?,
                                      OpaquePointer?) -> Int32
        let sign: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?, UnsafePointer<UInt8>?,
                                  Int) -> Int32
        let clearErrors: @convention(c) () -> Void

        init(_ library: OpenSSLLibrary) throws(OpenSSLUnavailable) {
            newRawPrivateKey = try library.symbol("EVP_PKEY_new_raw_private_key", as: (@convention(c) (Int32, OpaquePointer?,
                UnsafePointer<UInt8>?, Int) -> OpaquePointer?).self)
            rawPublicKey = try library.symbol("EVP_PKEY_get_raw_public_key", as: (@convention(c) (OpaquePointer?,
                UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?) -> Int32).self)
            keyFree = try library.symbol("EVP_PKEY_free", as: (@convention(c) (OpaquePointer?) -> Void).self)
            contextNew = try library.symbol("EVP_MD_CTX_new", as: (@convention(c) () -> OpaquePointer?).self)
            contextFree = try library.symbol("EVP_MD_CTX_free", as: (@convention(c) (OpaquePointer?) -> Void).self)
            signInit = try library.symbol("EVP_DigestSignInit", as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?,
                OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32).self)
            sign = try library.symbol("EVP_DigestSign", as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?,
                UnsafeMutablePointer<Int>?, UnsafePointer<UInt8>?, Int) -> Int32).self)
            clearErrors = try library.symbol("ERR_clear_error", as: (@convention(c) () -> Void).self)
        }
    }

    /// Why a seed cannot sign.
    package enum KeyError: Error, Equatable, CustomStringConvertible {
        /// OpenSSL 3 could not be loaded, or lacks Ed25519.
        case cryptoUnavailable(String)
        /// The seed is not 32 bytes.
        case badSeedLength(Int)

        package var description: String {
            switch self {
            case .cryptoUnavailable(let reason): reason
            case .badSeedLength(let count): "an Ed25519 seed has 32 bytes, not \(count)"
            }
        }
    }

    /// A signer for the private key of a 32-byte `seed`. Loads OpenSSL (blocking: call while
    /// configuring, off the event loops).
    package init(seed: [UInt8]) throws(KeyError) {
        guard seed.count == 32 else { throw .badSeedLength(seed.count) }
        let functions: Functions
        do {
            functions = try Functions(try OpenSSLLibrary.shared())
        } catch {
            throw .cryptoUnavailable(error.reason)
        }
        self.functions = functions
        let ed25519: Int32 = 1087  // EVP_PKEY_ED25519 (NID_ED25519)
        guard let key = seed.withUnsafeBufferPointer({ functions.newRawPrivateKey(ed25519, nil, $0.baseAddress, $0.count) }) else {
            functions.clearErrors()
            throw .cryptoUnavailable("OpenSSL could not make an Ed25519 key")
        }
        var publicKey = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard functions.rawPublicKey(key, &publicKey, &length) == 1, length == 32 else {
            functions.keyFree(key)
            functions.clearErrors()
            throw .cryptoUnavailable("OpenSSL could not derive the Ed25519 public key")
        }
        self.key = key
        self.publicKey = publicKey
    }

    deinit {
        functions.keyFree(key)
    }

    /// The 64-byte Ed25519 signature of `message`, or nil when OpenSSL fails. O(message length).
    package func sign(_ message: [UInt8]) -> [UInt8]? {
        guard let context = functions.contextNew() else { return nil }
        defer {
            functions.contextFree(context)
            functions.clearErrors()
        }
        guard functions.signInit(context, nil, nil, nil, key) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        let signed = message.withUnsafeBufferPointer { functions.sign(context, &signature, &length, $0.baseAddress, $0.count) }
        guard signed == 1, length == 64 else { return nil }
        return signature
    }
}
