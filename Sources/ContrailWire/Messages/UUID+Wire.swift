import Foundation

extension UUID {
    /// Parses the 8-4-4-4-12 hex form used on the wire, in either case. `nil` for anything else
    /// (no braces, no missing hyphens, no surrounding whitespace).
    public init?(wireString string: String) {
        var string = string
        guard let parsed = string.withUTF8({ UUID(wireBytes: $0) }) else { return nil }
        self = parsed
    }

    /// Parses the 8-4-4-4-12 hex form from UTF-8 bytes, as ``init(wireString:)`` does (no string is made).
    /// Eight digits at a time in a 64-bit word (SWAR), with no branch per digit: most of a log
    /// restore's time per fragment once went to parsing its UUID.
    package init?(wireBytes utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 36, let p = utf8.baseAddress,
              p[8] == UInt8(ascii: "-"), p[13] == UInt8(ascii: "-"), p[18] == UInt8(ascii: "-"), p[23] == UInt8(ascii: "-")
        else { return nil }
        let raw = UnsafeRawPointer(p)
        func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        func half(_ offset: Int) -> UInt64 { UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        var invalid: UInt64 = 0
        let parts = (UUID.hex8(word(0), &invalid), UUID.hex8(half(9) | half(14) << 32, &invalid),
                     UUID.hex8(half(19) | half(24) << 32, &invalid), UUID.hex8(word(28), &invalid))
        guard invalid == 0 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { out in
            out.storeBytes(of: parts.0.littleEndian, toByteOffset: 0, as: UInt32.self)
            out.storeBytes(of: parts.1.littleEndian, toByteOffset: 4, as: UInt32.self)
            out.storeBytes(of: parts.2.littleEndian, toByteOffset: 8, as: UInt32.self)
            out.storeBytes(of: parts.3.littleEndian, toByteOffset: 12, as: UInt32.self)
        }
        self.init(uuid: bytes)
    }

    /// The lowercase 8-4-4-4-12 form, as Jetstream sends UUIDs.
    public var wireString: String {
        String(unsafeUninitializedCapacity: 36) { writeWireBytes(to: $0) }
    }

    /// Writes the 36 bytes of ``wireString`` at the start of `out` (which holds at least 36) and
    /// returns 36: for writers that put a UUID in a buffer without making a string.
    @inline(__always)
    package func writeWireBytes(to out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let hex: StaticString = "0123456789abcdef"
        let digits = hex.utf8Start
        return withUnsafeBytes(of: uuid) { raw in
            var outIndex = 0
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[outIndex] = UInt8(ascii: "-")
                    outIndex += 1
                }
                out[outIndex] = digits[Int(byte >> 4)]
                out[outIndex + 1] = digits[Int(byte & 0x0F)]
                outIndex += 2
            }
            return outIndex
        }
    }

    /// The four bytes that eight hex digits (either case) spell, the first digit in the lowest
    /// byte of `chars`, the first byte in the lowest byte of the result; makes `invalid` non-zero
    /// when one of them is not a hex digit. Every step works on all eight bytes at once: a byte
    /// under 0x80 plus a constant under 0x80 never carries into the next byte.
    @inline(__always)
    private static func hex8(_ chars: UInt64, _ invalid: inout UInt64) -> UInt32 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high = ones &* 0x80
        let lower = chars | ones &* 0x20  // "A"-"F" become "a"-"f"; digits stay
        // A byte's high bit after adding (0x80 - lo) says it is >= lo; after adding (0x7F - hi), > hi.
        let isDigit = (chars &+ ones &* (0x80 - 0x30)) & ~(chars &+ ones &* (0x7F - 0x39))
        let isLetter = (lower &+ ones &* (0x80 - 0x61)) & ~(lower &+ ones &* (0x7F - 0x66))
        invalid |= (chars & high) | ((isDigit | isLetter) & high ^ high)
        // "0"-"9" are 0x3_, "A"-"F" 0x4_ and "a"-"f" 0x6_: bit 6 set means a letter, worth 9 more.
        let nibbles = (chars & 0x0F0F_0F0F_0F0F_0F0F) &+ ((chars >> 6) & ones) &* 9
        var packed = ((nibbles << 4) | (nibbles >> 8)) & 0x00FF_00FF_00FF_00FF
        packed = (packed | packed >> 8) & 0x0000_FFFF_0000_FFFF
        packed = (packed | packed >> 16) & 0xFFFF_FFFF
        return UInt32(truncatingIfNeeded: packed)
    }
}
