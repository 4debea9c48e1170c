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
    /// Branch-free per digit: digits and letters come in random order, and a branch on which it is
    /// mispredicted half the time (most of a log restore's time per fragment went there).
    init?(wireBytes utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 36, let p = utf8.baseAddress,
              p[8] == UInt8(ascii: "-"), p[13] == UInt8(ascii: "-"), p[18] == UInt8(ascii: "-"), p[23] == UInt8(ascii: "-")
        else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var invalid: UInt8 = 0
        withUnsafeMutableBytes(of: &bytes) { out in
            var index = 0
            for outIndex in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 { index += 1 }
                out[outIndex] = UUID.nibble(p[index], &invalid) << 4 | UUID.nibble(p[index + 1], &invalid)
                index += 2
            }
        }
        guard invalid == 0 else { return nil }
        self.init(uuid: bytes)
    }

    /// The lowercase 8-4-4-4-12 form, as Jetstream sends UUIDs.
    public var wireString: String {
        let hex: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits = hex.utf8Start
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
    }

    /// The value of hex digit `byte` (either case); sets `invalid` to non-zero when it is not one.
    @inline(__always)
    private static func nibble(_ byte: UInt8, _ invalid: inout UInt8) -> UInt8 {
        let isDigit = byte &- UInt8(ascii: "0") < 10
        let isLetter = (byte | 0x20) &- UInt8(ascii: "a") < 6
        invalid |= (isDigit ? 0 : 1) & (isLetter ? 0 : 1)
        return (byte & 0x0F) &+ 9 &* (byte &>> 6)  // "0"-"9" are 0x3_, "A"-"F" 0x4_ and "a"-"f" 0x6_
    }
}
