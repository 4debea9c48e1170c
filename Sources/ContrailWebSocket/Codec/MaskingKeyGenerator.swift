/// Produces unpredictable client masking keys from the system CSPRNG (`SystemRandomNumberGenerator`,
/// which reads `getrandom` on Linux and `arc4random` on Apple platforms).
///
/// One generator call yields two keys, halving the system calls. Keep one generator per connection.
public struct MaskingKeyGenerator: Sendable {
    private var spare: UInt32 = 0
    private var hasSpare = false

    /// A new generator.
    public init() {}

    /// The next masking key.
    public mutating func next() -> UInt32 {
        if hasSpare {
            hasSpare = false
            return spare
        }
        var rng = SystemRandomNumberGenerator()
        let bits = rng.next() as UInt64
        spare = UInt32(truncatingIfNeeded: bits >> 32)
        hasSpare = true
        return UInt32(truncatingIfNeeded: bits)
    }

    /// One masking key, straight from the system CSPRNG.
    public static func random() -> UInt32 {
        var rng = SystemRandomNumberGenerator()
        return rng.next()
    }
}
