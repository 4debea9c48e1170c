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
        let rotated = rotate(key, offset: offset)
        let word = wordKey(rotated)
        // A plain loop over 64-bit words: the optimizer vectorizes it (as fast as hand-written 16-byte
        // SIMD here), and unlike SIMD types it stays fast in debug builds.
        var seen: UInt64 = 0
        let words = buffer.count / 8
        var w = 0
        while w < words {
            let unmasked = base.loadUnaligned(fromByteOffset: w &* 8, as: UInt64.self) ^ word
            base.storeBytes(of: unmasked, toByteOffset: w &* 8, as: UInt64.self)
            seen |= unmasked
            w &+= 1
        }
        seen |= unmaskTail(from: base, to: base, start: words * 8, end: buffer.count, rotated: rotated)
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// Copies `source` into `destination` (at least as large), unmasking with `key` on the way, and tells
    /// whether the copied bytes are all ASCII: one pass over the bytes where a copy followed by
    /// `applyCheckingASCII(key:to:offset:)` takes two. `offset` is as for `apply(key:to:offset:)`; the
    /// buffers must not overlap. O(n), a 64-bit word at a time (vectorized by the optimizer).
    @inlinable
    public static func copyApplyingCheckingASCII(key: UInt32, from source: UnsafeRawBufferPointer,
                                                 to destination: UnsafeMutableRawBufferPointer, offset: Int = 0) -> Bool
    {
        precondition(destination.count >= source.count, "Masking.copyApplyingCheckingASCII: destination too small")
        guard let from = source.baseAddress, let to = destination.baseAddress, source.count > 0 else { return true }
        let rotated = rotate(key, offset: offset)
        let word = wordKey(rotated)
        // The loop of `applyCheckingASCII`, reading one buffer and writing the other (kept apart: one
        // loop for both would not be vectorized in place, where the two pointers are the same).
        var seen: UInt64 = 0
        let words = source.count / 8
        var w = 0
        while w < words {
            let unmasked = from.loadUnaligned(fromByteOffset: w &* 8, as: UInt64.self) ^ word
            to.storeBytes(of: unmasked, toByteOffset: w &* 8, as: UInt64.self)
            seen |= unmasked
            w &+= 1
        }
        seen |= unmaskTail(from: from, to: to, start: words * 8, end: source.count, rotated: rotated)
        return seen & 0x8080_8080_8080_8080 == 0
    }

    /// The key as it applies to a buffer that starts `offset` bytes into the payload.
    @inlinable
    static func rotate(_ key: UInt32, offset: Int) -> UInt32 {
        let rotation = UInt32((offset & 3) * 8)
        return rotation == 0 ? key : (key << rotation) | (key >> (32 - rotation))
    }

    /// A rotated key repeated over 64 bits. Both halves are equal, so the in-memory byte order is the
    /// wire order on any endianness.
    @inlinable
    static func wordKey(_ rotated: UInt32) -> UInt64 {
        let half = UInt64(rotated.bigEndian)
        return half | (half << 32)
    }

    /// Unmasks bytes `start..<end` (fewer than 8, after the words) from `from` into `to` (which may be
    /// the same) and returns them ORed together. `start` is a multiple of 8, so its key byte is the
    /// rotated key's first.
    @inlinable
    static func unmaskTail(from: UnsafeRawPointer, to: UnsafeMutableRawPointer, start: Int, end: Int, rotated: UInt32) -> UInt64 {
        var seen: UInt64 = 0
        var i = start
        var shift: UInt32 = 24
        while i < end {
            let b = from.load(fromByteOffset: i, as: UInt8.self) ^ UInt8(truncatingIfNeeded: rotated >> shift)
            to.storeBytes(of: b, toByteOffset: i, as: UInt8.self)
            seen |= UInt64(b)
            shift = shift == 0 ? 24 : shift - 8
            i += 1
        }
        return seen
    }

    /// Masks (or unmasks) `bytes` in place with `key`. See `apply(key:to:offset:)`.
    @inlinable
    public static func apply(key: UInt32, to bytes: inout [UInt8], offset: Int = 0) {
        bytes.withUnsafeMutableBytes { apply(key: key, to: $0, offset: offset) }
    }
}
