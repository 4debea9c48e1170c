import ContrailTLS
import ContrailWire
import Foundation

/// Checks JSON Web Tokens an app's backend issues and turns them into a ``SessionIdentity``:
/// `contrail serve --jwt-key FILE` runs one as its session hook. The key decides the algorithm:
/// an HS256 secret (at least 32 bytes), or a PEM public key for ES256 (P-256) or RS256 (RSA ≥ 2048).
///
/// Claims: `sub` (the user id, required), `exp` and `nbf` (seconds since 1970, optional),
/// `scopes` (an object of scope name or pattern → `"r"` or `"rw"`; missing: no scope), `admin`
/// (`true`: may read the server's overview). `alg: none`, another algorithm than the key's, a bad
/// signature, `crit` headers, and tokens expired or not yet valid by more than ``leeway`` are
/// refused with a ``JWTError``.
///
/// ```swift
/// let verifier = try JWTVerifier(keyFile: URL(filePath: "/etc/contrail/jwt.pem"))
/// var options = ServerOptions()
/// options.sessionHook = verifier.sessionHook()
/// ```
public struct JWTVerifier: Sendable {
    /// Clock skew tolerated on `exp` and `nbf`: 30 s. A session ends at `exp` plus this.
    public static let leeway: TimeInterval = 30
    /// Longest token accepted, in bytes.
    static let maxTokenBytes = 16 << 10

    private let signature: JWTSignatureVerifier

    /// Why a key cannot be used.
    public struct KeyError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The reason in words.
        public let description: String
    }

    /// A verifier for the key in `keyFile` (see the type's summary). Loads OpenSSL's libcrypto and
    /// reads the file: blocking, call while configuring.
    public init(keyFile: URL) throws(KeyError) {
        let data: Data
        do { data = try Data(contentsOf: keyFile) } catch {
            throw KeyError(description: "cannot read \(keyFile.path(percentEncoded: false)): \(error.localizedDescription)")
        }
        try self.init(key: Array(data))
    }

    /// A verifier for a key file's contents: a PEM public key or an HS256 secret.
    public init(key: [UInt8]) throws(KeyError) {
        do { signature = try JWTSignatureVerifier(key: key) } catch { throw KeyError(description: error.description) }
    }

    /// The algorithm the key verifies: `HS256`, `ES256` or `RS256`.
    public var algorithm: String { signature.algorithm }

    /// The identity `token` carries, if its signature and claims hold at `now`. O(token length + scopes).
    public func identity(fromToken token: String, now: Date = Date()) throws(JWTError) -> SessionIdentity {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maxTokenBytes else { throw .malformed("longer than \(Self.maxTokenBytes) bytes") }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("\(parts.count) parts instead of 3") }
        let header = try Self.object(parts[0], "header")
        guard case .string(let alg)? = header["alg"] else { throw .malformed("the header has no alg") }
        guard ["HS256", "ES256", "RS256"].contains(alg) else { throw .unsupportedAlgorithm(alg) }
        guard alg == signature.algorithm else { throw .algorithmMismatch(token: alg, key: signature.algorithm) }
        guard header["crit"] == nil else { throw .unsupportedCritical }
        guard let signed = Self.base64URLDecoded(parts[2]) else { throw .malformed("the signature is not base64url") }
        let signingInput = Array(bytes[..<parts[1].endIndex])
        guard signature.verify(signingInput: signingInput, signature: signed) else { throw .badSignature }
        return try Self.identity(claims: try Self.object(parts[1], "payload"), now: now.timeIntervalSince1970)
    }

    /// A session hook accepting a token in `SessionCreate` params (`{"token": …}`) or an
    /// `Authorization: Bearer …` header; any refusal denies with the ``JWTError``'s reason.
    public func sessionHook() -> @Sendable (_ params: [String: JSON], _ headers: [(String, String)]) async -> SessionDecision {
        { params, headers in
            guard let token = Self.token(params: params, headers: headers) else { return .deny(reason: JWTError.missing.description) }
            do throws(JWTError) { return .allow(try identity(fromToken: token)) } catch { return .deny(reason: error.description) }
        }
    }

    /// The token of a `SessionCreate`: params' `token`, else the `Authorization: Bearer` header.
    public static func token(params: [String: JSON], headers: [(String, String)]) -> String? {
        if case .string(let token)? = params["token"] { return token }
        guard let value = headers.first(where: { $0.0.lowercased() == "authorization" })?.1 else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bearer ") else { return nil }
        return String(trimmed.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }

    private static func identity(claims: [String: JSON], now: TimeInterval) throws(JWTError) -> SessionIdentity {
        guard case .string(let subject)? = claims["sub"], !subject.isEmpty else { throw .invalidClaim("sub must be a non-empty string") }
        let expiry = try time(claims["exp"], "exp")
        if let expiry, now > expiry + leeway { throw .expired }
        if let notBefore = try time(claims["nbf"], "nbf"), now + leeway < notBefore { throw .notYetValid }
        var grants: [String: ScopeAccess] = [:]
        switch claims["scopes"] {
        case nil, .null?: break
        case .object(let entries)?:
            for (pattern, value) in entries {
                switch value {
                case .string("r"): grants[pattern] = max(grants[pattern] ?? .read, .read)
                case .string("rw"): grants[pattern] = .write
                default: throw .invalidClaim("scopes['\(pattern)'] must be \"r\" or \"rw\"")
                }
            }
        default: throw .invalidClaim("scopes must be an object of scope pattern to \"r\" or \"rw\"")
        }
        let isAdmin: Bool
        switch claims["admin"] {
        case nil, .null?: isAdmin = false
        case .bool(let value)?: isAdmin = value
        default: throw .invalidClaim("admin must be true or false")
        }
        return SessionIdentity(user: subject, grants: ScopeGrants(grants),
                               expiry: expiry.map { Date(timeIntervalSince1970: $0 + leeway) }, isAdmin: isAdmin)
    }

    private static func time(_ value: JSON?, _ name: String) throws(JWTError) -> TimeInterval? {
        switch value {
        case nil, .null?: return nil
        case .int(let seconds)?: return TimeInterval(seconds)
        case .uint(let seconds)?: return TimeInterval(seconds)
        case .double(let seconds)? where seconds.isFinite: return seconds
        default: throw .invalidClaim("\(name) must be a number of seconds since 1970")
        }
    }

    private static func object(_ part: ArraySlice<UInt8>, _ name: String) throws(JWTError) -> [String: JSON] {
        guard let decoded = base64URLDecoded(part) else { throw .malformed("the \(name) is not base64url") }
        guard let json = try? JSON(parsing: decoded, limits: JSONLimits(maxDepth: 16, maxBytes: maxTokenBytes)),
              case .object(let members) = json else { throw .malformed("the \(name) is not a JSON object") }
        return members
    }

    /// Strict base64url without padding (RFC 7515 §2): nil for any other character or a
    /// leftover of one character. O(n).
    static func base64URLDecoded(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = (buffer << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        return output
    }
}
