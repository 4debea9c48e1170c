import ContrailSupport
/// A server's certificate chain and private key (PEM files), reloadable while the server runs: new
/// connections use the context of the last successful load, connections already open keep theirs.
///
/// ```swift
/// let tls = try TLSServerContext(certificateChainPath: "cert.pem", privateKeyPath: "key.pem")
/// // later, after the files were replaced (e.g. on SIGHUP):
/// try tls.reload()  // on failure the previous certificate stays in use
/// ```
///
/// Loading reads files: make it and call `reload()` off event loops.
public final class TLSServerContext: Sendable {
    /// The PEM certificate chain, the server's certificate first.
    public let certificateChainPath: String
    /// The PEM private key of that certificate.
    public let privateKeyPath: String
    private let current: SanitizerVisibleMutex<TLSContext>

    /// Loads the chain and key.
    /// - Throws: `invalidCertificateFile` (unreadable, not PEM, key not matching), `libraryUnavailable`.
    public init(certificateChainPath: String, privateKeyPath: String) throws(TLSError) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        current = SanitizerVisibleMutex(try TLSContext.server(certificateChainPath: certificateChainPath,
                                                              privateKeyPath: privateKeyPath))
    }

    /// Reads the files again; new connections get the new certificate. On failure nothing changes.
    /// - Throws: as `init`.
    public func reload() throws(TLSError) {
        let fresh = try TLSContext.server(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        current.withLock { $0 = fresh }
    }

    /// A session for one accepted connection. Does no I/O: safe on an event loop.
    package func makeSession() throws(TLSError) -> TLSSession {
        try TLSSession(context: current.withLock { $0 }, host: "", pins: [])
    }
}
