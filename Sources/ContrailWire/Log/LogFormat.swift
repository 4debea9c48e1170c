/// The on-disk layout of a ``LogFile``. All integers are little-endian.
///
/// File header, 16 bytes:
///
///     [8: magic "CTRLLOG\u{1A}"] [u32: format version = 1] [u32: CRC-32C of the 12 bytes before]
///
/// Then records, back to back, each a 13-byte header and the payload:
///
///     [u32: payload length] [u32: CRC-32C of kind + payload] [u8: kind] [u32: CRC-32C of the 9 bytes before] [payload]
///
/// This is the suggested `[length][crc][kind][payload]` layout plus a checksum over the record
/// header. Without it a bit flip in the *length* of a middle record can make that record seem to
/// run past the end of the file, which is exactly what a torn last write looks like, and recovery
/// would cut off every good record after it. With it a length is trusted only if its header
/// checks out. A damaged record is called a torn tail only when no intact record follows it
/// anywhere in the file (found by a byte-wise scan that runs only on damage); otherwise it is
/// middle corruption and reported, never cut.
///
/// Two more rules keep damage from passing for a torn write (a torn write can only hit records
/// that were not yet synced):
/// - A snapshot record is never torn: it is written to a temporary file and synced before that
///   file is renamed into place.
/// - After each sync the writer appends a *sync marker*, a record of kind 3 whose 8-byte payload
///   (u64) is the file length that sync made durable (when another thread synced, the marker goes
///   out in front of the next appended record, in the same write, or at close). A damaged record that starts before the
///   largest length an intact marker names was synced, so it is damage, never a torn tail.
///   Markers are bookkeeping: readers skip them and never hand them to the layer above.
///
/// A file may be longer than its records: a writer that preallocates (``LogWriter``) leaves zeros
/// after them. Zeros from a record boundary to the end of the file (at least a record header's
/// worth; no header is all zeros) are no record: the records end there, nothing is cut, and the
/// next append goes there. Zeros in the part a marker (or the `.synced` side file) says was
/// synced are damage, like any other damage there.
enum LogFormat {
    /// The file's first eight bytes.
    static let magic: [UInt8] = Array("CTRLLOG\u{1A}".utf8)
    /// The format version this code writes and reads.
    static let version: UInt32 = 1
    /// Bytes in the file header.
    static let fileHeaderSize = 16
    /// Bytes in a record header.
    static let recordHeaderSize = 13
    /// The record kind of a sync marker (see the type's documentation).
    static let syncMarkerKind: UInt8 = 3
    /// Bytes in a sync marker's payload.
    static let syncMarkerPayloadSize = 8
    /// The largest payload the format can describe.
    static let maxPayload = Int(UInt32.max)

    /// The 16 header bytes of a new file.
    static var fileHeader: [UInt8] {
        var bytes = magic
        appendLE(version, to: &bytes)
        appendLE(CRC32C.checksum(bytes), to: &bytes)
        return bytes
    }

    /// What a file header says.
    enum HeaderCheck: Equatable {
        case valid
        case notALog
        case unsupportedVersion(UInt32)
    }

    /// Checks 16 header bytes.
    static func checkFileHeader(_ bytes: UnsafeRawBufferPointer) -> HeaderCheck {
        guard bytes.count >= fileHeaderSize, bytes.prefix(8).elementsEqual(magic) else { return .notALog }
        let storedCRC = loadLE(bytes, 12)
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<12])) == storedCRC else { return .notALog }
        let version = loadLE(bytes, 8)
        return version == LogFormat.version ? .valid : .unsupportedVersion(version)
    }

    /// Writes the 13-byte header of a record into `out`.
    @inline(__always)
    static func writeRecordHeader(kind: UInt8, payload: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        var crc = CRC32C()
        crc.update(byte: kind)
        crc.update(payload)
        out.storeBytes(of: UInt32(payload.count).littleEndian, toByteOffset: 0, as: UInt32.self)
        out.storeBytes(of: crc.value.littleEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: kind, toByteOffset: 8, as: UInt8.self)
        let headerCRC = CRC32C.checksum(UnsafeRawBufferPointer(start: out, count: 9))
        out.storeBytes(of: headerCRC.littleEndian, toByteOffset: 9, as: UInt32.self)
    }

    /// A record header's fields, read without trusting them.
    struct RecordHeader {
        var length: Int
        var payloadCRC: UInt32
        var kind: UInt8
        var isIntact: Bool

        /// Reads the header in the first 13 bytes of `bytes`.
        @inline(__always)
        init(_ bytes: UnsafeRawBufferPointer) {
            length = Int(LogFormat.loadLE(bytes, 0))
            payloadCRC = LogFormat.loadLE(bytes, 4)
            kind = bytes[8]
            isIntact = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<9])) == LogFormat.loadLE(bytes, 9)
        }

        /// Whether `payload` matches the stored checksum.
        @inline(__always)
        func payloadMatches(_ payload: UnsafeRawBufferPointer) -> Bool {
            var crc = CRC32C()
            crc.update(byte: kind)
            crc.update(payload)
            return crc.value == payloadCRC
        }
    }

    @inline(__always)
    static func loadLE(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    static func appendLE(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
