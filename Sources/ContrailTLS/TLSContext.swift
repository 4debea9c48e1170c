import ContrailSupport

/// One OpenSSL `SSL_CTX`: the settings, trust store (client) or certificate and key (server) that
/// sessions are made from. Made off the event loop (it reads files); sessions are cheap to make from it.
///
/// `@unchecked Sendable` invariant: `context` is configured in the initializer and never changed after;
/// `SSL_new` on a configured `SSL_CTX` is thread-safe (OpenSSL counts its references).
package final class TLSContext: @unchecked Sendable {
    let functions: TLSFunctions
    let context: OpaquePointer
    let isServer: Bool

    private init(functions: TLSFunctions, isServer: Bool) throws(TLSError) {
        guard let method = isServer ? functions.tlsServerMethod() : functions.tlsClientMethod(),
            let context = functions.ctxNew(method)
        else {
            throw .libraryUnavailable("SSL_CTX_new failed: \(functions.takeErrorString() ?? "no reason given")")
        }
        self.functions = functions
        self.context = context
        self.isServer = isServer
        // TLS 1.2 at least; the highest both sides speak (TLS 1.3 here) is chosen.
        _ = functions.ctxCtrl(context, TLSFunctions.ctrlSetMinProtoVersion, TLSFunctions.tls12Version, nil)
        _ = functions.ctxSetOptions(context, TLSFunctions.optionNoRenegotiation | TLSFunctions.optionNoCompression
            | TLSFunctions.optionCipherServerPreference)
        // TLS 1.3's three suites, AES-128-GCM first: as secure for this use and ~30 % less CPU per
        // byte than AES-256-GCM (10 rounds instead of 14). TLS 1.2 keeps OpenSSL's default list.
        _ = functions.ctxSetCiphersuites(context, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256")
        _ = functions.ctxCtrl(context, TLSFunctions.ctrlMode, TLSFunctions.modeReleaseBuffers, nil)
    }

    deinit { functions.ctxFree(context) }

    /// A client context trusting `caBundlePath` (or the system's roots). Reads files: not on a loop.
    static func client(caBundlePath: String?) throws(TLSError) -> TLSContext {
        let functions = try TLSFunctions.shared()
        let made = try TLSContext(functions: functions, isServer: false)
        functions.errClearError()
        if let caBundlePath {
            guard functions.ctxLoadVerifyLocations(made.context, caBundlePath, nil) == 1 else {
                throw .invalidCertificateFile(path: caBundlePath, reason: functions.takeErrorString() ?? "no certificates in it")
            }
        } else {
            guard functions.ctxSetDefaultVerifyPaths(made.context) == 1 else {
                throw .libraryUnavailable("the system's CA certificates could not be loaded: \(functions.takeErrorString() ?? "")")
            }
        }
        functions.ctxSetVerify(made.context, TLSFunctions.verifyPeer, nil)
        return made
    }

    /// A server context with a PEM certificate chain (leaf first) and its PEM private key. Reads files:
    /// not on a loop.
    static func server(certificateChainPath: String, privateKeyPath: String) throws(TLSError) -> TLSContext {
        let functions = try TLSFunctions.shared()
        let made = try TLSContext(functions: functions, isServer: true)
        functions.errClearError()
        guard functions.ctxUseCertificateChainFile(made.context, certificateChainPath) == 1 else {
            throw .invalidCertificateFile(path: certificateChainPath, reason: functions.takeErrorString() ?? "no certificate in it")
        }
        guard functions.ctxUsePrivateKeyFile(made.context, privateKeyPath, TLSFunctions.filetypePEM) == 1 else {
            throw .invalidCertificateFile(path: privateKeyPath, reason: functions.takeErrorString() ?? "no private key in it")
        }
        guard functions.ctxCheckPrivateKey(made.context) == 1 else {
            throw .invalidCertificateFile(path: privateKeyPath,
                                          reason: "the key does not match the certificate: \(functions.takeErrorString() ?? "")")
        }
        return made
    }

    /// The client contexts made so far, by CA bundle (nil: the system's roots): loading the roots once.
    private static let clients = SanitizerVisibleMutex<[String?: TLSContext]>([:])

    /// The client context for `configuration`, made on a thread of its own the first time (it loads
    /// OpenSSL and reads the trust store: ``BlockingCall``), then reused.
    package static func client(for configuration: TLSClientConfiguration) async throws(TLSError) -> TLSContext {
        let key = configuration.caBundlePath
        if let cached = clients.withLock({ $0[key] }) { return cached }
        let result = await BlockingCall.run("contrail-tls") {
            Result { () throws(TLSError) in try client(caBundlePath: key) }
        }
        let made = try result.get()
        return clients.withLock { cache in
            if let earlier = cache[key] { return earlier }
            cache[key] = made
            return made
        }
    }
}
