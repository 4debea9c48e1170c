/// CRC-32C (Castagnoli polynomial, reflected `0x82F63B78`), the checksum of iSCSI, ext4 and LevelDB.
///
/// Table-driven, slicing-by-8: eight bytes per step with eight 256-entry tables.
///
/// ```swift
/// CRC32C.checksum(Array("123456789".utf8))   // 0xE3069283
/// var crc = CRC32C()
/// crc.update([0x01])
/// crc.update(payload)                        // same as checksum([0x01] + payload)
/// ```
public struct CRC32C: Sendable, Equatable {
    /// The checksum of every byte passed to `update` so far (0 for no bytes).
    public private(set) var value: UInt32 = 0

    /// A checksum of no bytes.
    public init() {}

    /// Extends the checksum with `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        value = CRC32C.extend(value, bytes)
    }

    /// Extends the checksum with `bytes`.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        if let done: UInt32 = bytes.withContiguousStorageIfAvailable({ CRC32C.extend(value, UnsafeRawBufferPointer($0)) }) {
            value = done
        } else {
            let copy = Array(bytes)
            value = copy.withUnsafeBytes { CRC32C.extend(value, $0) }
        }
    }

    /// Extends the checksum with one byte.
    public mutating func update(byte: UInt8) {
        value = CRC32C.table.withUnsafeBufferPointer { t in
            let c = ~value
            return ~(t[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8))
        }
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        extend(0, bytes)
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    /// Continues the checksum `crc` (of earlier bytes) over `bytes`.
    @inline(__always)
    static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return table.withUnsafeBufferPointer { tables in
            // `tables` always holds 8 * 256 entries: the unchecked base pointer is safe.
            let t = tables.baseAddress.unsafelyUnwrapped
            var c = ~crc
            var p = base
            var n = bytes.count
            // Byte-wise until the pointer is 8-aligned, so the wide loads below are aligned.
            while n > 0 && Int(bitPattern: p) & 7 != 0 {
                c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c >> 8)
                p += 1
                n -= 1
            }
            while n >= 8 {
                let word = UInt64(littleEndian: p.load(as: UInt64.self))
                let lo = UInt32(truncatingIfNeeded: word) ^ c
                let hi = UInt32(truncatingIfNeeded: word >> 32)
                c = t[7 * 256 + Int(lo & 0xFF)]
                    ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)]
                    ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)]
                    ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)]
                    ^ t[Int(hi >> 24)]
                p += 8
                n -= 8
            }
            while n > 0 {
                c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c >> 8)
                p += 1
                n -= 1
            }
            return ~c
        }
    }

    /// Eight 256-entry tables: table k gives the CRC of a byte followed by k zero bytes.
    static let table: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (previous >> 8) ^ t[Int(previous & 0xFF)]
            }
        }
        return t
    }()
}
