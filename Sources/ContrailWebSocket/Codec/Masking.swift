/// XOR masking of WebSocket payloads (RFC 6455 §5.3).
///
/// A masking key is held as a `UInt32` whose big-endian bytes are the four key bytes in wire order
/// (`key >> 24` is the byte that masks payload byte 0). Masking and unmasking are the same operation.
public enum Masking {
    /// Masks (or unmasks) `buffer` in place with `key`.
    ///
    /// - Parameter offset: how many payload bytes precede `buffer` in the frame, so a payload can be
    ///   processed in pieces; the key byte used for `buffer[0]` is key byte `offset % 4`.
    ///
    /// Works a 64-bit word at a time (vectorized by the optimizer); O(n).
    @inlinable
    public static func apply(key: UInt32, to buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) {
        guard key != 0 else { return }
        _ = applyCheckingASCII(key: key, to: buffer, offset: offset)
    }

    /// Unmasks `buffer` in place like `apply(key:to:offset:)` and tells, from the same pass, whether the
    /// unmasked bytes are all ASCII (below 0x80), so a UTF-8 validator can skip them. O(n), a 64-bit word
    /// at a time (vectorized by the optimizer).
    @inlinable
    public static func applyCheckingASCII(key: UInt32, to buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) -> Bool {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return true }
        let count = buffer.count
        let rotation = UInt32((offset & 3) * 8)
        let rotated = rotation == 0 ? key : (key << rotation) | (key >> (32 - rotation))
        // Both halves are equal, so the in-memory byte order is the wire order on any endianness.
        let half = UInt64(rotated.bigEndian)
        let word = half | (half << 32)
        // A plain loop over 64-bit words: the optimizer vectorizes it (as fast as hand-written 16-byte
        // SIMD here), and unlike SIMD types it stays fast in debug builds.
        var seen: UInt64 = 0
        let words = count / 8
        var w = 0
        while w < words {
            let unmasked = base.loadUnaligned(fromByteOffset: w &* 8, as: UInt64.self) ^ word
            base.storeBytes(of: unmasked, toByteOffset: w &* 8, as: UInt64.self)
            seen |= unmasked
            w &+= 1
        }
        var i = words * 8
        // Tail: i is a multiple of 8, so key byte (i % 4) == 0 of the rotated key.
        var shift: UInt32 = 24
        while i < count {
            let b = base.load(fromByteOffset: i, as: UInt8.self) ^ UInt8(truncatingIfNeeded: rotated >> shift)
            base.storeBytes(of: b, toByteOffset: i, as: UInt8.self)
            seen |= UInt64(b)
            shift = shift == 0 ? 24 : shift - 8
            i += 1
        }
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// Masks (or unmasks) `bytes` in place with `key`. See `apply(key:to:offset:)`.
    @inlinable
    public static func apply(key: UInt32, to bytes: inout [UInt8], offset: Int = 0) {
        bytes.withUnsafeMutableBytes { apply(key: key, to: $0, offset: offset) }
    }
}
