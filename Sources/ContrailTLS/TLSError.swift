/// Why a TLS connection or configuration failed. Each case names the reason a person can act on.
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// OpenSSL 3 (`libssl.so.3`) could not be loaded, or lacks a function Contrail calls.
    case libraryUnavailable(String)
    /// A certificate, key or CA bundle file could not be read or used (path, OpenSSL's reason).
    case invalidCertificateFile(path: String, reason: String)
    /// The configuration is unusable (e.g. a pin that is not the base64 of 32 bytes).
    case invalidConfiguration(String)
    /// The server's certificate (or one in its chain) has expired.
    case certificateExpired
    /// The server's certificate (or one in its chain) is not valid yet (check the clock).
    case certificateNotYetValid
    /// The certificate chain does not lead to a trusted root: self-signed, or signed by an unknown CA
    /// (OpenSSL's reason).
    case untrustedCertificate(String)
    /// The certificate is valid but not for the host the client asked for.
    case hostnameMismatch(host: String)
    /// The certificate is trusted, but its public key matches none of the pinned keys.
    case pinMismatch
    /// The certificate was rejected for another reason (OpenSSL's `X509_V_ERR_*` code and text).
    case certificateRejected(code: Int, reason: String)
    /// The handshake failed without a certificate verdict (no common protocol version or cipher, the
    /// peer is not speaking TLS, the peer refused our certificate, ...): OpenSSL's reason.
    case handshakeFailed(String)
    /// An established connection broke at the TLS layer (a bad record, an alert from the peer).
    case connectionFailed(String)

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .libraryUnavailable(let why):
            "TLS is unavailable: \(why)"
        case .invalidCertificateFile(let path, let why):
            "Cannot use the certificate/key file \(path): \(why)"
        case .invalidConfiguration(let why):
            "Invalid TLS configuration: \(why)"
        case .certificateExpired:
            "The server's certificate has expired"
        case .certificateNotYetValid:
            "The server's certificate is not valid yet (is the clock right?)"
        case .untrustedCertificate(let why):
            "The server's certificate is not trusted (\(why)): it is self-signed or its CA is unknown; pass the CA bundle"
        case .hostnameMismatch(let host):
            "The server's certificate is not valid for \(host)"
        case .pinMismatch:
            "The server's public key matches none of the pinned keys"
        case .certificateRejected(let code, let why):
            "The server's certificate was rejected (X509 error \(code)): \(why)"
        case .handshakeFailed(let why):
            "The TLS handshake failed: \(why)"
        case .connectionFailed(let why):
            "The TLS connection failed: \(why)"
        }
    }

    /// The error for an `X509_V_ERR_*` code from `SSL_get_verify_result`.
    static func verification(code: Int, host: String, functions: TLSFunctions) -> TLSError {
        let text = functions.x509VerifyCertErrorString(code).map { String(cString: $0) } ?? "error \(code)"
        switch code {
        case 10: return .certificateExpired  // X509_V_ERR_CERT_HAS_EXPIRED
        case 9: return .certificateNotYetValid  // X509_V_ERR_CERT_NOT_YET_VALID
        // UNABLE_TO_GET_ISSUER_CERT, DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN,
        // UNABLE_TO_GET_ISSUER_CERT_LOCALLY, UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_UNTRUSTED.
        case 2, 18, 19, 20, 21, 27: return .untrustedCertificate(text)
        case 62, 63, 64: return .hostnameMismatch(host: host)  // HOSTNAME, EMAIL, IP_ADDRESS_MISMATCH
        default: return .certificateRejected(code: code, reason: text)
        }
    }
}
