import Foundation

/// A NATS nkey: an Ed25519 key pair in NATS's text form (base32 with a role prefix and a CRC-16).
/// A seed (`SU…` for a user) signs the server's `nonce` in `CONNECT`; its public key (`U…`) is what
/// the server's configuration or the user's JWT names.
///
/// Its descriptions name the public key only, never the seed.
package struct NKey: Sendable, CustomStringConvertible {
    /// What a key is for: the prefix byte of its text form.
    package enum Role: UInt8, Sendable {
        /// `O…`: signs accounts.
        case operatorKey = 112  // 14 << 3
        /// `A…`: signs users.
        case account = 0
        /// `U…`: connects.
        case user = 160  // 20 << 3
    }

    /// The key's role.
    package let role: Role
    private let signer: Ed25519Signer
    /// The seed's 32 bytes (kept to write `seedText` for tests and tools; never printed).
    private let seed: [UInt8]

    private static let seedPrefix: UInt8 = 144  // 18 << 3: 'S'

    /// Reads a seed in text form (`SU…`, `SA…`, `SO…`; surrounding whitespace ignored).
    /// - Throws: `invalidCredentials` for text that is not a seed (bad base32, bad checksum, a public
    ///   key, an unknown role) or when OpenSSL cannot do Ed25519. The message never holds the text.
    package init(seedText: String) throws(NATSError) {
        let text = seedText.trimmingSpaces()
        guard let raw = Self.base32Decode(text), raw.count == 36 else {
            throw .invalidCredentials("the nkey seed is not a seed (base32 of 36 bytes)")
        }
        guard Self.crc16(raw[0..<34]) == UInt16(raw[34]) | UInt16(raw[35]) << 8 else {
            throw .invalidCredentials("the nkey seed's checksum is wrong")
        }
        guard raw[0] & 0xF8 == Self.seedPrefix else { throw .invalidCredentials("the nkey is a public key, not a seed") }
        let prefix = (raw[0] & 0x07) << 5 | (raw[1] & 0xF8) >> 3
        guard let role = Role(rawValue: prefix) else { throw .invalidCredentials("the nkey seed has an unknown role") }
        try self.init(role: role, seed: Array(raw[2..<34]))
    }

    /// The key of `role` for a 32-byte `seed`.
    /// - Throws: `invalidCredentials` when the seed is not 32 bytes or OpenSSL cannot do Ed25519.
    package init(role: Role, seed: [UInt8]) throws(NATSError) {
        do { signer = try Ed25519Signer(seed: seed) } catch { throw .invalidCredentials("nkey: \(error)") }
        self.role = role
        self.seed = seed
    }

    /// The public key in text form (`U…`, `A…`, `O…`).
    package var publicKey: String {
        let body = [role.rawValue] + signer.publicKey
        let crc = Self.crc16(body[...])
        return Self.base32Encode(body + [UInt8(crc & 0xFF), UInt8(crc >> 8)])
    }

    /// The seed in text form (`S…`): a secret, for writing a credentials file in tests and tools.
    package var seedText: String {
        let body = [Self.seedPrefix | role.rawValue >> 5, (role.rawValue & 0x1F) << 3] + seed
        let crc = Self.crc16(body[...])
        return Self.base32Encode(body + [UInt8(crc & 0xFF), UInt8(crc >> 8)])
    }

    /// The signature of `message`, base64url without padding (as `CONNECT`'s `sig` and JWTs carry it).
    /// - Throws: `invalidCredentials` when OpenSSL fails to sign.
    package func signature(_ message: [UInt8]) throws(NATSError) -> String {
        guard let signature = signer.sign(message) else { throw .invalidCredentials("nkey: OpenSSL could not sign") }
        return Self.base64URL(signature)
    }

    /// The role and public key (no secret).
    package var description: String { "nkey \(publicKey)" }

    // MARK: Encodings

    /// CRC-16/XMODEM (polynomial 0x1021, initial 0), as nkeys check their text. O(count).
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// RFC 4648 base32 without padding. O(count).
    static func base32Encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 4648 base32 without padding; nil for a character outside the alphabet. O(count).
    static func base32Decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                out.append(UInt8(buffer >> UInt32(bits - 8) & 0xFF))
                bits -= 8
            }
        }
        return out
    }

    /// Base64url without padding (RFC 4648 §5). O(count).
    package static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
