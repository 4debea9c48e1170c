/// The libssl and libcrypto functions the TLS engine calls, resolved once from the loaded OpenSSL 3
/// (`OpenSSLLibrary`) into typed function values. Every type below matches OpenSSL 3's C declaration
/// (`OpaquePointer` for its opaque structs, `Int` for `long`, `UInt64` for `uint64_t`).
///
/// `@unchecked Sendable` invariant: every stored property is a constant C function pointer.
struct TLSFunctions: @unchecked Sendable {
    typealias Method = @convention(c) () -> OpaquePointer?
    let tlsClientMethod: Method
    let tlsServerMethod: Method
    let ctxNew: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let ctxFree: @convention(c) (OpaquePointer?) -> Void
    let ctxCtrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    let ctxSetOptions: @convention(c) (OpaquePointer?, UInt64) -> UInt64
    let ctxSetCiphersuites: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    let ctxSetDefaultVerifyPaths: @convention(c) (OpaquePointer?) -> Int32
    let ctxLoadVerifyLocations: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    let ctxSetVerify: @convention(c) (OpaquePointer?, Int32, UnsafeMutableRawPointer?) -> Void
    let ctxUseCertificateChainFile: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    let ctxUsePrivateKeyFile: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32
    let ctxCheckPrivateKey: @convention(c) (OpaquePointer?) -> Int32
    let sslNew: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let sslFree: @convention(c) (OpaquePointer?) -> Void
    let sslSetBio: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Void
    let sslSetConnectState: @convention(c) (OpaquePointer?) -> Void
    let sslSetAcceptState: @convention(c) (OpaquePointer?) -> Void
    let sslDoHandshake: @convention(c) (OpaquePointer?) -> Int32
    let sslRead: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    let sslWrite: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    let sslShutdown: @convention(c) (OpaquePointer?) -> Int32
    let sslGetError: @convention(c) (OpaquePointer?, Int32) -> Int32
    let sslCtrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    let sslSet1Host: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    let sslGetVerifyResult: @convention(c) (OpaquePointer?) -> Int
    let sslGet1PeerCertificate: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let sslGetVersion: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    let x509Free: @convention(c) (OpaquePointer?) -> Void
    let x509GetX509Pubkey: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let i2dX509Pubkey: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32
    let x509VerifyCertErrorString: @convention(c) (Int) -> UnsafePointer<CChar>?
    let bioSMem: @convention(c) () -> OpaquePointer?
    let bioNew: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let bioRead: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    let bioWrite: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    let bioCtrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    let errGetError: @convention(c) () -> UInt
    let errErrorStringN: @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void
    let errClearError: @convention(c) () -> Void
    let evpSHA256: @convention(c) () -> OpaquePointer?
    let evpDigest: @convention(c) (UnsafeRawPointer?, Int, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?,
                                   OpaquePointer?, OpaquePointer?) -> Int32
    let cryptoFree: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int32) -> Void

    /// The process's table, resolved on first use (after `OpenSSLLibrary` loads: call it off the loop).
    static func shared() throws(TLSError) -> TLSFunctions {
        switch loaded {
        case .success(let functions): return functions
        case .failure(let error): throw error
        }
    }

    private static let loaded: Result<TLSFunctions, TLSError> = {
        do throws(OpenSSLUnavailable) {
            return .success(try TLSFunctions(try OpenSSLLibrary.shared()))
        } catch {
            return .failure(.libraryUnavailable(error.reason))
        }
    }()

    private init(_ lib: OpenSSLLibrary) throws(OpenSSLUnavailable) {
        func s<Function>(_ name: String) throws(OpenSSLUnavailable) -> Function { try lib.symbol(name, as: Function.self) }
        tlsClientMethod = try lib.symbol("TLS_client_method", as: Method.self)
        tlsServerMethod = try lib.symbol("TLS_server_method", as: Method.self)
        ctxNew = try s("SSL_CTX_new")
        ctxFree = try s("SSL_CTX_free")
        ctxCtrl = try s("SSL_CTX_ctrl")
        ctxSetOptions = try s("SSL_CTX_set_options")
        ctxSetCiphersuites = try s("SSL_CTX_set_ciphersuites")
        ctxSetDefaultVerifyPaths = try s("SSL_CTX_set_default_verify_paths")
        ctxLoadVerifyLocations = try s("SSL_CTX_load_verify_locations")
        ctxSetVerify = try s("SSL_CTX_set_verify")
        ctxUseCertificateChainFile = try s("SSL_CTX_use_certificate_chain_file")
        ctxUsePrivateKeyFile = try s("SSL_CTX_use_PrivateKey_file")
        ctxCheckPrivateKey = try s("SSL_CTX_check_private_key")
        sslNew = try s("SSL_new")
        sslFree = try s("SSL_free")
        sslSetBio = try s("SSL_set_bio")
        sslSetConnectState = try s("SSL_set_connect_state")
        sslSetAcceptState = try s("SSL_set_accept_state")
        sslDoHandshake = try s("SSL_do_handshake")
        sslRead = try s("SSL_read")
        sslWrite = try s("SSL_write")
        sslShutdown = try s("SSL_shutdown")
        sslGetError = try s("SSL_get_error")
        sslCtrl = try s("SSL_ctrl")
        sslSet1Host = try s("SSL_set1_host")
        sslGetVerifyResult = try s("SSL_get_verify_result")
        sslGet1PeerCertificate = try s("SSL_get1_peer_certificate")
        sslGetVersion = try s("SSL_get_version")
        x509Free = try s("X509_free")
        x509GetX509Pubkey = try s("X509_get_X509_PUBKEY")
        i2dX509Pubkey = try s("i2d_X509_PUBKEY")
        x509VerifyCertErrorString = try s("X509_verify_cert_error_string")
        bioSMem = try s("BIO_s_mem")
        bioNew = try s("BIO_new")
        bioRead = try s("BIO_read")
        bioWrite = try s("BIO_write")
        bioCtrl = try s("BIO_ctrl")
        errGetError = try s("ERR_get_error")
        errErrorStringN = try s("ERR_error_string_n")
        errClearError = try s("ERR_clear_error")
        evpSHA256 = try s("EVP_sha256")
        evpDigest = try s("EVP_Digest")
        cryptoFree = try s("CRYPTO_free")
    }

    // OpenSSL 3's constants for the macros Contrail uses (ssl.h, bio.h, x509_vfy.h).
    static let ctrlSetMinProtoVersion: Int32 = 123  // SSL_CTRL_SET_MIN_PROTO_VERSION
    static let ctrlMode: Int32 = 33  // SSL_CTRL_MODE
    static let ctrlSetTLSExtHostName: Int32 = 55  // SSL_CTRL_SET_TLSEXT_HOSTNAME
    static let tls12Version = 0x0303  // TLS1_2_VERSION
    static let modeReleaseBuffers = 0x10  // SSL_MODE_RELEASE_BUFFERS
    static let optionNoRenegotiation: UInt64 = 1 << 30  // SSL_OP_NO_RENEGOTIATION
    static let optionNoCompression: UInt64 = 1 << 17  // SSL_OP_NO_COMPRESSION
    static let optionCipherServerPreference: UInt64 = 1 << 22  // SSL_OP_CIPHER_SERVER_PREFERENCE
    static let verifyPeer: Int32 = 1  // SSL_VERIFY_PEER
    static let filetypePEM: Int32 = 1  // SSL_FILETYPE_PEM
    static let bioCtrlPending: Int32 = 10  // BIO_CTRL_PENDING
    static let bioSetMemEOFReturn: Int32 = 130  // BIO_C_SET_BUF_MEM_EOF_RETURN
    static let errorWantRead: Int32 = 2  // SSL_ERROR_WANT_READ
    static let errorWantWrite: Int32 = 3  // SSL_ERROR_WANT_WRITE
    static let errorZeroReturn: Int32 = 6  // SSL_ERROR_ZERO_RETURN

    /// The oldest error on this thread's OpenSSL error queue as text (and clears the queue), or nil.
    func takeErrorString() -> String? {
        var first: String?
        while case let code = errGetError(), code != 0 {
            if first == nil {
                var text = [CChar](repeating: 0, count: 256)
                errErrorStringN(code, &text, text.count)
                first = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return first
    }

    /// SHA-256 of `bytes`.
    func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { out in
            evpDigest(bytes.baseAddress, bytes.count, out.baseAddress, &size, evpSHA256(), nil)
        }
        return ok == 1 && size == 32 ? digest : nil
    }
}
