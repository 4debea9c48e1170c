import Foundation

/// How a client verifies the server's certificate.
///
/// ```swift
/// var tls = TLSClientConfiguration()
/// tls.caBundlePath = "/etc/myapp/ca.pem"  // nil: the system's roots
/// tls.pinnedKeys = ["n3dNcH43TClpDuyYl55ASuoWMfYEYUFZRNfQJr0j5Ho="]
/// ```
///
/// The chain must lead to a trusted root (the system's, honouring `SSL_CERT_FILE`/`SSL_CERT_DIR` as
/// OpenSSL does, or the bundle's), be valid now, and name the URL's host (DNS name or IP address).
/// TLS 1.2 is the minimum; TLS 1.3 is negotiated whenever the server offers it.
public struct TLSClientConfiguration: Sendable, Equatable {
    /// A PEM file of CA certificates trusted instead of the system's roots; nil: the system's roots.
    public var caBundlePath: String?
    /// Public-key pins: the base64 SHA-256 of the leaf certificate's SubjectPublicKeyInfo (as HPKP pins,
    /// e.g. `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`).
    /// When not empty, a verified certificate must also match one of them; empty: no pinning.
    public var pinnedKeys: [String]

    /// System roots, no pins, unless given.
    public init(caBundlePath: String? = nil, pinnedKeys: [String] = []) {
        self.caBundlePath = caBundlePath
        self.pinnedKeys = pinnedKeys
    }

    /// The pins as 32-byte digests.
    /// - Throws: `invalidConfiguration` for a pin that is not the base64 of 32 bytes.
    func decodedPins() throws(TLSError) -> [[UInt8]] {
        var pins: [[UInt8]] = []
        for pin in pinnedKeys {
            let trimmed = pin.hasPrefix("sha256/") ? String(pin.dropFirst(7)) : pin
            guard let data = Data(base64Encoded: trimmed), data.count == 32 else {
                throw .invalidConfiguration("the pin '\(pin)' is not the base64 of a SHA-256 digest (32 bytes)")
            }
            pins.append([UInt8](data))
        }
        return pins
    }
}
