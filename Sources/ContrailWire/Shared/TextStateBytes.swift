/// The bytes of an encoded text state's run table (Protocol §8.21): written with unsigned LEB128
/// varints (zigzag for signed deltas), read back with every read bounds-checked, so hostile bytes
/// give a `TextError`, never a crash.
struct TextStateBytes {
    private(set) var bytes: [UInt8]
    private var offset = 0

    /// Bytes to write into.
    init() {
        bytes = []
    }

    /// Bytes to read.
    init(reading bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether every byte was read.
    var isAtEnd: Bool { offset == bytes.count }

    mutating func write(byte: UInt8) {
        bytes.append(byte)
    }

    mutating func write(varint value: Int) {
        precondition(value >= 0, "a varint is not negative")
        var rest = UInt64(value)
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A signed value, zigzag-encoded (0, -1, 1, -2, … as 0, 1, 2, 3, …).
    mutating func write(signed value: Int) {
        write(varint: value >= 0 ? value << 1 : ((-value) << 1) - 1)
    }

    mutating func readByte() throws(TextError) -> UInt8 {
        guard offset < bytes.count else { throw .malformed("a text state's runs end too early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A varint no greater than `limit` (at most 5 bytes: the limits are below 2³²).
    mutating func readVarint(max limit: Int) throws(TextError) -> Int {
        var value = 0
        var shift = 0
        while true {
            let byte = try readByte()
            value |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
            guard shift < 35 else { throw .malformed("a varint of a text state is too long") }
        }
        guard value <= limit else { throw .malformed("a number of a text state is above \(limit)") }
        return value
    }

    /// A zigzag-encoded signed value whose magnitude is at most `limit`.
    mutating func readSigned(max limit: Int) throws(TextError) -> Int {
        let raw = try readVarint(max: 2 * limit + 1)
        return raw & 1 == 0 ? raw >> 1 : -((raw + 1) >> 1)
    }
}
