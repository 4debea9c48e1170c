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
    init?(wireBytes utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var index = 0
            var outIndex = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                guard let high = UUID.hexValue(utf8[index]), let low = UUID.hexValue(utf8[index + 1]) else { return false }
                out[outIndex] = high << 4 | low
                outIndex += 1
                index += 2
            }
            return true
        }
        guard ok else { return nil }
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

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }
}
