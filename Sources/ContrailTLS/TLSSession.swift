import ContrailSupport

/// One TLS connection's state (an OpenSSL `SSL` over two memory BIOs), driven by a `Channel` as its
/// `ChannelSecurity`: the channel feeds it the socket's ciphertext and writes out what it produces, so
/// the handshake runs on the event loop without blocking and the socket stays the channel's.
///
/// A client session verifies the server's chain (`SSL_VERIFY_PEER`), its name (`SSL_set1_host`, DNS
/// name or IP address) and, with pins, its public key before it counts as established; until then
/// the channel holds back what its owner writes.
///
/// `@unchecked Sendable` invariant: the `SSL`, the BIOs and `phase` are touched only inside the
/// `ChannelSecurity` calls, which the channel makes under its lock (one at a time); `failure` is
/// behind its own lock, for the owner to read from any thread.
package final class TLSSession: ChannelSecurity, @unchecked Sendable {
    private enum Phase {
        case idle
        case handshaking
        case established
        case closed
        case failed
    }

    private let functions: TLSFunctions
    /// Kept alive as long as the session (the `SSL` holds a reference too; this makes it explicit).
    private let context: TLSContext
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer
    /// The name the certificate must carry (a client's), for the error message.
    private let host: String
    private let pins: [[UInt8]]
    private var phase = Phase.idle
    /// What the owner may ask from any thread: why it failed, whether the handshake completed.
    private let outcome = SanitizerVisibleMutex<(failure: TLSError?, established: Bool)>((nil, false))
    /// Where `takeOutput` reads ciphertext to before appending it.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Why the session failed, once it has (read by the channel's owner when the channel ends).
    package var failure: TLSError? { outcome.withLock { $0.failure } }

    /// Whether the handshake has completed (and the peer was verified), from any thread.
    package var handshakeCompleted: Bool { outcome.withLock { $0.established } }

    /// The negotiated protocol, e.g. "TLSv1.3" (meaningful once established).
    package var protocolVersion: String {
        functions.sslGetVersion(ssl).map { String(cString: $0) } ?? "unknown"
    }

    init(context: TLSContext, host: String, pins: [[UInt8]]) throws(TLSError) {
        let functions = context.functions
        guard let ssl = functions.sslNew(context.context) else {
            throw .libraryUnavailable("SSL_new failed: \(functions.takeErrorString() ?? "out of memory")")
        }
        guard let input = functions.bioNew(functions.bioSMem()), let output = functions.bioNew(functions.bioSMem()) else {
            functions.sslFree(ssl)
            throw .libraryUnavailable("BIO_new failed")
        }
        // An empty memory BIO means "wait for more", not end of stream.
        _ = functions.bioCtrl(input, TLSFunctions.bioSetMemEOFReturn, -1, nil)
        _ = functions.bioCtrl(output, TLSFunctions.bioSetMemEOFReturn, -1, nil)
        functions.sslSetBio(ssl, input, output)  // the SSL owns both BIOs from here
        self.functions = functions
        self.context = context
        self.ssl = ssl
        self.input = input
        self.output = output
        self.host = host
        self.pins = pins
        if context.isServer {
            functions.sslSetAcceptState(ssl)
        } else {
            functions.sslSetConnectState(ssl)
            // SNI for names only (RFC 6066 forbids address literals); the check takes both.
            if !host.isEmpty && !Self.isAddressLiteral(host) {
                _ = host.withCString { name in
                    functions.sslCtrl(ssl, TLSFunctions.ctrlSetTLSExtHostName, 0, UnsafeMutableRawPointer(mutating: name))
                }
            }
            guard functions.sslSet1Host(ssl, host) == 1 else {
                functions.sslFree(ssl)
                throw .invalidConfiguration("'\(host)' cannot be checked against a certificate")
            }
        }
    }

    /// A client session for a connection to `host`, verified as `configuration` says. Makes (once) the
    /// context on a background queue: call it before handing the socket to its loop.
    package static func client(host: String, configuration: TLSClientConfiguration) async throws(TLSError) -> TLSSession {
        let pins = try configuration.decodedPins()
        let context = try await TLSContext.client(for: configuration)
        return try TLSSession(context: context, host: host, pins: pins)
    }

    deinit {
        functions.sslFree(ssl)
        scratch.deallocate()
    }

    private static func isAddressLiteral(_ host: String) -> Bool {
        host.contains(":") || host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }
    }

    // MARK: ChannelSecurity

    package var isEstablished: Bool { phase == .established }

    package func start() {
        guard phase == .idle else { return }
        phase = .handshaking
        if !context.isServer { _ = handshake() }
    }

    package func receive(_ ciphertext: UnsafeRawBufferPointer) -> Bool {
        guard phase != .failed else { return false }
        var offset = 0
        while offset < ciphertext.count {
            let chunk = min(ciphertext.count - offset, Int(Int32.max))
            let wrote = functions.bioWrite(input, ciphertext.baseAddress! + offset, Int32(chunk))
            guard wrote > 0 else {
                fail(.connectionFailed("the TLS input buffer refused \(chunk) bytes"))
                return false
            }
            offset += Int(wrote)
        }
        return true
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> ChannelSecurityRead {
        switch phase {
        case .failed: return .failed
        case .idle, .handshaking:
            if phase == .idle { phase = .handshaking }
            switch handshake() {
            case .needMore: return .needMore
            case .failed: return .failed
            case .plaintext, .closed: break
            }
        case .established, .closed: break
        }
        functions.errClearError()
        let count = functions.sslRead(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if count > 0 { return .plaintext(Int(count)) }
        switch functions.sslGetError(ssl, count) {
        case TLSFunctions.errorWantRead, TLSFunctions.errorWantWrite:
            return .needMore
        case TLSFunctions.errorZeroReturn:
            return .closed
        default:
            fail(.connectionFailed(functions.takeErrorString() ?? "the peer ended the TLS stream without close_notify"))
            return .failed
        }
    }

    package func send(_ plaintext: UnsafeRawBufferPointer) -> Bool {
        guard phase == .established else { return phase != .failed && plaintext.isEmpty }
        functions.errClearError()
        var offset = 0
        while offset < plaintext.count {
            let chunk = min(plaintext.count - offset, 1 << 30)
            let wrote = functions.sslWrite(ssl, plaintext.baseAddress! + offset, Int32(chunk))
            guard wrote > 0 else {
                fail(.connectionFailed(functions.takeErrorString() ?? "SSL_write failed"))
                return false
            }
            offset += Int(wrote)
        }
        return true
    }

    package func takeOutput(into out: inout [UInt8]) {
        while functions.bioCtrl(output, TLSFunctions.bioCtrlPending, 0, nil) > 0 {
            let count = functions.bioRead(output, scratch.baseAddress, Int32(scratch.count))
            guard count > 0 else { return }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<Int(count)]))
        }
    }

    package func close() {
        guard phase == .established else { return }
        phase = .closed
        functions.errClearError()
        _ = functions.sslShutdown(ssl)
        functions.errClearError()
    }

    // MARK: Handshake

    /// Advances the handshake: `.closed` once it is complete (and the peer verified), `.needMore`
    /// while it waits for the peer, `.failed` with `failure` set.
    private func handshake() -> ChannelSecurityRead {
        functions.errClearError()
        let status = functions.sslDoHandshake(ssl)
        if status == 1 {
            if !pins.isEmpty && !peerKeyIsPinned() {
                fail(.pinMismatch)
                return .failed
            }
            phase = .established
            outcome.withLock { $0.established = true }
            return .closed
        }
        let code = functions.sslGetError(ssl, status)
        if code == TLSFunctions.errorWantRead || code == TLSFunctions.errorWantWrite { return .needMore }
        let reason = functions.takeErrorString()
        if !context.isServer, case let verdict = functions.sslGetVerifyResult(ssl), verdict != 0 {
            fail(TLSError.verification(code: verdict, host: host, functions: functions))
        } else {
            fail(.handshakeFailed(reason ?? "the peer closed the connection during the handshake"))
        }
        return .failed
    }

    /// Whether the SHA-256 of the peer certificate's SubjectPublicKeyInfo is one of `pins`.
    private func peerKeyIsPinned() -> Bool {
        guard let certificate = functions.sslGet1PeerCertificate(ssl) else { return false }
        defer { functions.x509Free(certificate) }
        guard let key = functions.x509GetX509Pubkey(certificate) else { return false }
        var der: UnsafeMutablePointer<UInt8>?
        let length = functions.i2dX509Pubkey(key, &der)
        guard length > 0, let der else { return false }
        defer { functions.cryptoFree(der, nil, 0) }
        guard let digest = functions.sha256(UnsafeRawBufferPointer(start: der, count: Int(length))) else { return false }
        return pins.contains(digest)
    }

    private func fail(_ error: TLSError) {
        phase = .failed
        outcome.withLock { if $0.failure == nil { $0.failure = error } }
    }
}
