/// Why ``JWTVerifier`` refused a token. The description names the reason and never contains the token.
public enum JWTError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not three base64url parts, a part that does not decode, a header or payload that is not a
    /// JSON object, or a token over 16 KiB.
    case malformed(String)
    /// The header's `alg` is `none` or an algorithm Contrail does not verify.
    case unsupportedAlgorithm(String)
    /// The header's `alg` is not the one the key verifies (e.g. an HS256 token for an RSA key).
    case algorithmMismatch(token: String, key: String)
    /// The signature does not verify with the key.
    case badSignature
    /// `exp` has passed (beyond the leeway).
    case expired
    /// `nbf` is still ahead (beyond the leeway).
    case notYetValid
    /// A claim is missing or has the wrong shape (`sub`, `exp`, `nbf`, `scopes`, `admin`).
    case invalidClaim(String)
    /// The header lists `crit` extensions, which Contrail does not understand.
    case unsupportedCritical
    /// No token in `SessionCreate` params (`token`) nor an `Authorization: Bearer` header.
    case missing

    /// The reason in words.
    public var description: String {
        switch self {
        case .malformed(let reason): return "malformed token: \(reason)"
        case .unsupportedAlgorithm(let alg): return "token algorithm '\(alg)' is not accepted (HS256, ES256, RS256)"
        case .algorithmMismatch(let token, let key): return "token algorithm \(token) does not match the server's \(key) key"
        case .badSignature: return "token signature does not verify"
        case .expired: return "token has expired"
        case .notYetValid: return "token is not valid yet (nbf)"
        case .invalidClaim(let reason): return "invalid token claim: \(reason)"
        case .unsupportedCritical: return "token header has crit extensions, which are not supported"
        case .missing: return "no token"
        }
    }
}
