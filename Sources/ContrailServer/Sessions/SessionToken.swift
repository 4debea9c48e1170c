/// Session tokens: 64 characters from `[A-Za-z0-9]` drawn from the system's secure random source,
/// about 381 bits (§8.8). Tokens are bearer secrets and never logged.
enum SessionToken {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// A fresh token.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        while bytes.count < 64 {
            let value = UInt8.random(in: 0...255, using: &generator)
            if value < 248 { bytes.append(alphabet[Int(value % 62)]) }  // 248 = 4 × 62: no bias
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
