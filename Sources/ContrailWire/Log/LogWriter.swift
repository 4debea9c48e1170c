import ContrailSupport

/// Appends encoded records to an open file descriptor through an in-memory buffer.
///
/// Small records are copied into the buffer and written with one `pwrite` when it fills or on
/// `flush`; a record larger than the buffer is written straight from the caller's memory.
/// A failed write is rolled back (`ftruncate` to the last good end), so the file never keeps
/// a partial record that later appends would bury in the middle.
///
/// With a `preallocation` chunk, the file is extended ahead of the records (`fallocate`, in
/// chunks of that many bytes) so an append writes inside the file and never grows it: on ext4 an
/// extending write updates the on-disk size under the inode's block-mapping lock and through the
/// journal, where it waits behind a concurrent `fdatasync`'s writeback and journal commits
/// (milliseconds under disk load). The preallocated part reads as zeros, which ``LogReader``
/// takes as the end of the records; ``trimPreallocation()`` cuts it off (at close).
final class LogWriter {
    let fd: Int32
    let path: String
    /// Bytes in the file that are fully written (the file's size on disk).
    private(set) var writtenEnd: Int
    /// Whether bytes were written since the last `fsync`.
    private(set) var needsSync = false
    /// Set when a failed write could not be rolled back: the file end is unknown, stop writing.
    private(set) var failure: String?
    private let buffer: UnsafeMutableRawBufferPointer
    private(set) var buffered = 0
    /// Bytes the file is extended by ahead of the records (0: never preallocated). Set to 0 when
    /// the file system refuses (no `fallocate`, or no space: the writes then report it themselves).
    private var preallocation: Int
    /// The file's size: `writtenEnd` plus the preallocated, still zeroed part after it.
    private(set) var allocatedEnd: Int

    /// A writer appending at `writtenEnd` of the open file `fd`, whose size is `fileSize` (more
    /// than `writtenEnd` when a zeroed preallocated part follows the records).
    init(fd: Int32, path: String, writtenEnd: Int, bufferCapacity: Int, preallocation: Int = 0, fileSize: Int? = nil) {
        self.fd = fd
        self.path = path
        self.writtenEnd = writtenEnd
        self.preallocation = max(preallocation, 0)
        self.allocatedEnd = max(fileSize ?? writtenEnd, writtenEnd)
        buffer = .allocate(byteCount: max(bufferCapacity, 0), alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// The logical end of the log: written plus buffered bytes.
    var end: Int { writtenEnd + buffered }

    /// Adds one record. On error nothing of this record is kept; earlier buffered records are.
    func append(kind: UInt8, payload: UnsafeRawBufferPointer) throws(LogFileError) {
        let total = LogFormat.recordHeaderSize + payload.count
        if buffered + total > buffer.count { try flush() }
        if total <= buffer.count {
            let destination = buffer.baseAddress.unsafelyUnwrapped + buffered
            LogFormat.writeRecordHeader(kind: kind, payload: payload, into: destination)
            if let source = payload.baseAddress {
                (destination + LogFormat.recordHeaderSize).copyMemory(from: source, byteCount: payload.count)
            }
            buffered += total
        } else {
            // Larger than the buffer (which is empty now): header, then the payload in place.
            var header = (UInt64(0), UInt64(0))
            try withUnsafeMutableBytes(of: &header) { (headerBytes) throws(LogFileError) in
                LogFormat.writeRecordHeader(kind: kind, payload: payload, into: headerBytes.baseAddress.unsafelyUnwrapped)
                try writeOrRollBack([UnsafeRawBufferPointer(rebasing: headerBytes[0..<LogFormat.recordHeaderSize]), payload])
            }
        }
    }

    /// Drops buffered bytes past `end` (used to take back a record whose write failed).
    func discardBuffered(downTo end: Int) {
        buffered = max(0, min(buffered, end - writtenEnd))
    }

    /// Writes the buffer out (no fsync). On error the file is rolled back and the buffer kept.
    func flush() throws(LogFileError) {
        guard buffered > 0 else { return }
        try writeOrRollBack([UnsafeRawBufferPointer(rebasing: buffer[0..<buffered])])
        buffered = 0
    }

    /// Forces written bytes to stable storage.
    func sync() throws(LogFileError) {
        try LogWriter.syncDescriptor(fd, path)
        needsSync = false
    }

    /// Records that the first `end` bytes were synced by another thread (nothing to sync if that is all).
    func didSync(through end: Int) {
        if end >= writtenEnd { needsSync = false }
    }

    /// Cuts the preallocated part off the file, so it ends with its last record (for `close`).
    /// Best effort: a file left longer reads the same.
    func trimPreallocation() {
        guard allocatedEnd > writtenEnd, failure == nil else { return }
        if ftruncate(fd, off_t(writtenEnd)) == 0 { allocatedEnd = writtenEnd }
    }

    /// Extends the file to the next multiple of the preallocation chunk past `end`, if `end` is
    /// past its allocated size. A refusal turns preallocation off (the writes extend the file then).
    private func reserve(through end: Int) {
        guard preallocation > 0, end > allocatedEnd else { return }
        let target = (end / preallocation + 1) * preallocation
        if Platform.preallocate(fd, offset: allocatedEnd, length: target - allocatedEnd) {
            allocatedEnd = target
        } else {
            preallocation = 0
        }
    }

    /// Writes `parts` one after another at `writtenEnd`; on failure truncates back and throws.
    private func writeOrRollBack(_ parts: [UnsafeRawBufferPointer]) throws(LogFileError) {
        reserve(through: writtenEnd + parts.reduce(0) { $0 + $1.count })
        var position = writtenEnd
        for part in parts {
            guard let base = part.baseAddress else { continue }
            var done = 0
            while done < part.count {
                let n = pwrite(fd, base + done, part.count - done, off_t(position + done))
                if n < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    if position + done > writtenEnd {
                        // Cut the partial record (and the zeroed part after it) off.
                        guard ftruncate(fd, off_t(writtenEnd)) == 0 else {
                            let reason = "a write failed (\(LogFileError.system(code, "write", path))) and the partial record could not be removed; reopen the log to recover"
                            failure = reason
                            throw .unusable(path: path, reason: reason)
                        }
                        allocatedEnd = writtenEnd
                    }
                    throw LogFileError.system(code, "write", path)
                }
                done += n
            }
            position += part.count
        }
        writtenEnd = position
        needsSync = true
    }

    /// Writes all of `bytes` at `offset` (no rollback: for headers of files being created).
    static func writeAll(_ fd: Int32, _ path: String, _ bytes: [UInt8], at offset: Int) throws(LogFileError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress.unsafelyUnwrapped + done, $0.count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw LogFileError.system(errno, "write", path)
            }
            done += n
        }
    }

    /// Calls `body` with the bytes of `array`, keeping the error typed (`withUnsafeBytes` rethrows untyped).
    static func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(LogFileError) -> R) throws(LogFileError) -> R {
        try array.withUnsafeBytes { bytes in Result { () throws(LogFileError) -> R in try body(bytes) } }.get()
    }

    /// `open(2)` with permissions 0644 for created files; -1 and `errno` on failure.
    static func openFile(_ path: String, _ flags: Int32) -> Int32 {
        Platform.open(path, flags, 0o644)
    }

    /// Releases the file's `flock` and closes it, ignoring errors (nothing useful can be done about
    /// them here). The lock belongs to the open file description, which a child process being
    /// spawned at that moment also holds until it execs: without the explicit unlock, reopening
    /// the log right after closing it could find it still locked.
    static func closeFile(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        Platform.close(fd)
    }

    /// `fdatasync` on Linux (the size update needed to read appended data is included), `fsync` elsewhere.
    static func syncDescriptor(_ fd: Int32, _ path: String) throws(LogFileError) {
        while true {
            let result = Platform.syncData(fd)
            if result == 0 { return }
            if errno != EINTR { throw LogFileError.system(errno, "fsync", path) }
        }
    }
}
