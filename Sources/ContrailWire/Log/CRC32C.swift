import CContrailSystem

/// CRC-32C (Castagnoli polynomial, reflected `0x82F63B78`), the checksum of iSCSI, ext4 and LevelDB.
///
/// With the CPU's CRC-32C instruction where there is one (x86-64 with SSE 4.2, checked once at run
/// time); otherwise table-driven, slicing-by-16: sixteen bytes per step through sixteen 256-entry
/// tables (16 KiB, fits in L1): about 2-2.5 GB/s on cached data in release builds on the CI machine.
///
/// ```swift
/// CRC32C.checksum(Array("123456789".utf8))   // 0xE3069283
/// var crc = CRC32C()
/// crc.update([0x01])
/// crc.update(payload)                        // same as checksum([0x01] + payload)
/// ```
package struct CRC32C: Sendable, Equatable {
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
        let t = CRC32C.tables
        let c = ~value
        value = ~(t[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8))
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

    /// Whether the CPU's CRC-32C instruction is used (x86-64 with SSE 4.2): about four times the
    /// table's rate, a tenth of a log restore's time.
    package static let usesHardware = ccontrail_crc32c_available() != 0

    /// Continues the checksum `crc` (of earlier bytes) over `bytes`.
    static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        if usesHardware { return ~ccontrail_crc32c_extend(~crc, base, bytes.count) }
        return tableExtend(crc, bytes)
    }

    /// ``extend(_:_:)`` with the tables, whatever the CPU has.
    package static func tableExtend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        let t = tables
        var c = ~crc
        var p = base
        var n = bytes.count
        // Byte-wise until the pointer is 8-aligned, so the wide loads below are aligned.
        while n > 0 && Int(bitPattern: p) & 7 != 0 {
            c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c >> 8)
            p += 1
            n -= 1
        }
        // Sixteen bytes per step: byte j of the block goes through table 15 - j.
        while n >= 16 {
            let a = UInt64(littleEndian: p.load(as: UInt64.self)) ^ UInt64(c)
            let b = UInt64(littleEndian: p.load(fromByteOffset: 8, as: UInt64.self))
            c = t[15 &* 256 &+ Int(truncatingIfNeeded: a & 0xFF)]
                ^ t[14 &* 256 &+ Int(truncatingIfNeeded: (a &>> 8) & 0xFF)]
                ^ t[13 &* 256 &+ Int(truncatingIfNeeded: (a &>> 16) & 0xFF)]
                ^ t[12 &* 256 &+ Int(truncatingIfNeeded: (a &>> 24) & 0xFF)]
                ^ t[11 &* 256 &+ Int(truncatingIfNeeded: (a &>> 32) & 0xFF)]
                ^ t[10 &* 256 &+ Int(truncatingIfNeeded: (a &>> 40) & 0xFF)]
                ^ t[9 &* 256 &+ Int(truncatingIfNeeded: (a &>> 48) & 0xFF)]
                ^ t[8 &* 256 &+ Int(truncatingIfNeeded: (a &>> 56) & 0xFF)]
                ^ t[7 &* 256 &+ Int(truncatingIfNeeded: b & 0xFF)]
                ^ t[6 &* 256 &+ Int(truncatingIfNeeded: (b &>> 8) & 0xFF)]
                ^ t[5 &* 256 &+ Int(truncatingIfNeeded: (b &>> 16) & 0xFF)]
                ^ t[4 &* 256 &+ Int(truncatingIfNeeded: (b &>> 24) & 0xFF)]
                ^ t[3 &* 256 &+ Int(truncatingIfNeeded: (b &>> 32) & 0xFF)]
                ^ t[2 &* 256 &+ Int(truncatingIfNeeded: (b &>> 40) & 0xFF)]
                ^ t[1 &* 256 &+ Int(truncatingIfNeeded: (b &>> 48) & 0xFF)]
                ^ t[0 &* 256 &+ Int(truncatingIfNeeded: (b &>> 56) & 0xFF)]
            p += 16
            n &-= 16
        }
        while n > 0 {
            c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c >> 8)
            p += 1
            n -= 1
        }
        return ~c
    }

    /// Sixteen 256-entry tables: table k gives the CRC of a byte followed by k zero bytes.
    /// Allocated once and never freed; a raw pointer, so lookups cost no reference counting.
    nonisolated(unsafe) static let tables: UnsafePointer<UInt32> = {
        let t = UnsafeMutablePointer<UInt32>.allocate(capacity: 16 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for k in 1..<16 {
            for i in 0..<256 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (previous >> 8) ^ t[Int(previous & 0xFF)]
            }
        }
        return UnsafePointer(t)
    }()
}
