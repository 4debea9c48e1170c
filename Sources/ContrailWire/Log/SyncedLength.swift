import ContrailSupport

/// The side file `NAME.synced` next to a log: how many bytes of the log (identified by its inode)
/// a sync has made durable. It tells damage from a torn write even where no sync marker survives
/// (a bad block that wipes the end of the file together with its last marker): everything before
/// that length was synced, so it can only be damaged, never torn, and a file shorter than that
/// has lost its end.
///
/// 24 bytes, little-endian: `[u64: inode] [u64: synced length] [u32: CRC-32C of the 16 bytes before] [u32: 0]`.
/// It is rewritten in place (never synced itself) after each sync that wrote a marker, so after a
/// power loss it holds an older, smaller length, or the newest one: never more than the log has
/// on disk. A compaction makes a new inode, so a side file left from the old one is ignored.
/// Best effort throughout: a missing or damaged side file only means less protection.
enum SyncedLength {
    static let size = 24

    /// The side file's path for the log at `path`.
    static func path(of path: String) -> String { path + ".synced" }

    /// The inode of the open file `fd` (0 if it cannot be read).
    static func inode(of fd: Int32) -> UInt64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_ino) : 0
    }

    /// The synced length recorded for the log at `path` whose inode is `inode`; 0 if none.
    static func read(logPath: String, inode: UInt64) -> Int {
        let fd = Platform.open(path(of: logPath), O_RDONLY | O_CLOEXEC, 0)
        guard fd >= 0 else { return 0 }
        defer { _ = Platform.close(fd) }
        var bytes = [UInt8](repeating: 0, count: size)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }
        guard n == size else { return 0 }
        return bytes.withUnsafeBytes { raw in
            let storedInode = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            let length = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let crc = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self))
            guard storedInode == inode, inode != 0, CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<16])) == crc else { return 0 }
            return Int(clamping: length)
        }
    }

    /// Records that the first `length` bytes of the log with `inode` are synced, writing through
    /// `fd` (the side file, opened with ``openForWriting(logPath:)``). Errors are ignored.
    static func write(_ fd: Int32, inode: UInt64, length: Int) {
        guard fd >= 0 else { return }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        withUnsafeBytes(of: inode.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(length).littleEndian) { bytes.append(contentsOf: $0) }
        let crc = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes.append(contentsOf: $0) }
        bytes += [0, 0, 0, 0]
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, size, 0) }
    }

    /// Opens (creating) the side file of the log at `logPath` for writing; -1 if that fails.
    static func openForWriting(logPath: String) -> Int32 {
        Platform.open(path(of: logPath), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
}
