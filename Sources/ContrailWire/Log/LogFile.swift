import ContrailSupport
import Foundation

/// An append-only file of checksummed records: the storage under the fragment log.
///
/// It knows nothing about models: a record is a ``LogRecord/Kind`` tag and payload bytes. The
/// layout (a 16-byte file header, then records with a 13-byte header each) is described in
/// `LogFormat.swift`. Opening a log reads every record back, cuts off a torn
/// tail (a crash in the middle of a write) and reports it; damage in the middle of the file is a
/// ``LogFileError/corruptRecord(offset:reason:)`` and nothing is cut.
///
/// ```swift
/// let (log, recovery) = try LogFile.open(at: url, fsync: .interval(.seconds(1)))
/// for record in recovery.records { restore(record.payload) }
/// let offset = try log.append(.changeSet, jsonBytes)
/// try log.compact(snapshot: stateBytes)      // history before the snapshot is dropped
/// try log.close()
/// ```
///
/// A `LogFile` holds an exclusive `flock` on its file, so a second writer (in this or another
/// process) gets ``LogFileError/locked(path:)``. It is not `Sendable`: use it from one actor or thread.
package final class LogFile {
    /// The default ``maxRecordSize``: 64 MiB.
    public static let defaultMaxRecordSize = 64 << 20
    /// The default in-memory append buffer: 64 KiB.
    public static let defaultBufferCapacity = 64 << 10

    /// Where the log lives.
    public let url: URL
    /// When appended records are forced to disk.
    public let fsyncPolicy: FsyncPolicy
    /// The largest payload accepted by `append` and when reading.
    public let maxRecordSize: Int

    private let path: String
    private let bufferCapacity: Int
    private var writer: LogWriter
    /// ``LogClock`` time of the last sync.
    private var lastSync: Int64
    /// The sync interval in nanoseconds (``FsyncPolicy/interval(_:)`` only).
    private let syncInterval: Int64
    /// Set once the log must not be used any more (closed, or a sync failed).
    private var unusableReason: String?
    /// Whether `close()` closed the descriptor.
    private var isClosed = false

    private init(url: URL, path: String, writer: LogWriter, fsync: FsyncPolicy, maxRecordSize: Int, bufferCapacity: Int) {
        self.url = url
        self.path = path
        self.writer = writer
        self.fsyncPolicy = fsync
        self.maxRecordSize = maxRecordSize
        self.bufferCapacity = bufferCapacity
        self.lastSync = LogClock.now()
        if case .interval(let interval) = fsync { syncInterval = LogClock.nanoseconds(interval) } else { syncInterval = 0 }
    }

    deinit {
        // Best effort for a log that was never closed; call close() to see errors.
        if unusableReason == nil && writer.failure == nil {
            try? writer.flush()
            if fsyncPolicy != .never && writer.needsSync { try? writer.sync() }
        }
        if !isClosed { LogWriter.closeFile(writer.fd) }
    }

    /// The log's size in bytes, including appended records still in the memory buffer.
    public var size: Int { writer.end }

    // MARK: Opening

    /// Opens the log at `url` for appending, creating it (and writing its header) if it is missing
    /// or empty. Reads every record, and cuts off and reports a torn tail.
    ///
    /// - Parameters:
    ///   - fsync: when appends are forced to disk.
    ///   - maxRecordSize: the largest payload accepted; a longer length in the file is corruption.
    ///   - bufferCapacity: bytes of small appends gathered in memory before one write (0: write each).
    /// - Throws: ``LogFileError/badHeader(path:)``, ``LogFileError/corruptRecord(offset:reason:)``
    ///   for damage in the middle, ``LogFileError/locked(path:)``, or an I/O error.
    public static func open(
        at url: URL, fsync: FsyncPolicy = .everyRecord, maxRecordSize: Int = defaultMaxRecordSize,
        bufferCapacity: Int = defaultBufferCapacity
    ) throws(LogFileError) -> (LogFile, LogRecovery) {
        var records: [LogRecord] = []
        let (log, tail) = try open(at: url, fsync: fsync, maxRecordSize: maxRecordSize, bufferCapacity: bufferCapacity) { kind, offset, payload in
            records.append(LogRecord(kind: kind, payload: Array(payload), offset: offset))
        }
        return (log, LogRecovery(records: records, truncatedTail: tail))
    }

    /// Like ``open(at:fsync:maxRecordSize:bufferCapacity:)``, but hands each record to `visit`
    /// without copying its payload (the buffer is valid only during the call) instead of
    /// collecting them. Returns the torn tail that was cut off, if any.
    public static func open(
        at url: URL, fsync: FsyncPolicy = .everyRecord, maxRecordSize: Int = defaultMaxRecordSize,
        bufferCapacity: Int = defaultBufferCapacity,
        visit: (_ kind: LogRecord.Kind, _ offset: Int, _ payload: UnsafeRawBufferPointer) -> Void
    ) throws(LogFileError) -> (LogFile, TornTail?) {
        let path = url.path(percentEncoded: false)
        let fd = LogWriter.openFile(path, O_RDWR | O_CREAT | O_CLOEXEC)
        guard fd >= 0 else { throw LogFileError.system(errno, "open", path) }
        var handedOver = false
        defer { if !handedOver { LogWriter.closeFile(fd) } }

        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            throw code == EWOULDBLOCK ? .locked(path: path) : LogFileError.system(code, "flock", path)
        }
        var fileSize = try sizeOf(fd, path)
        if try needsInitialHeader(fd, path, fileSize) {
            try writeInitialHeader(fd, path)
            fileSize = LogFormat.fileHeaderSize
        } else {
            try checkHeader(fd, path, fileSize)
        }
        // A compaction that crashed before its rename leaves its temp file; we hold the lock, so it is stale.
        _ = unlink(compactionTempPath(path))

        let reader = LogReader(fd: fd, path: path, fileSize: fileSize, maxRecordSize: maxRecordSize)
        let outcome = try reader.scan(from: LogFormat.fileHeaderSize) { kind, offset, payload in
            visit(LogRecord.Kind(rawValue: kind).unsafelyUnwrapped, offset, payload)  // the reader only yields known kinds
        }
        if outcome.tornTail != nil {
            guard ftruncate(fd, off_t(outcome.end)) == 0 else { throw LogFileError.system(errno, "ftruncate", path) }
            try LogWriter.syncDescriptor(fd, path)
        }
        let writer = LogWriter(fd: fd, path: path, writtenEnd: outcome.end, bufferCapacity: bufferCapacity)
        handedOver = true
        let log = LogFile(url: url, path: path, writer: writer, fsync: fsync, maxRecordSize: maxRecordSize, bufferCapacity: bufferCapacity)
        return (log, outcome.tornTail)
    }

    /// Reads every record of the log at `url` without changing the file (no lock, no truncation).
    /// A torn tail is reported in ``LogRecovery/truncatedTail`` but left in place.
    public static func read(at url: URL, maxRecordSize: Int = defaultMaxRecordSize) throws(LogFileError) -> LogRecovery {
        var records: [LogRecord] = []
        let tail = try forEachRecord(at: url, maxRecordSize: maxRecordSize) { kind, offset, payload in
            records.append(LogRecord(kind: kind, payload: Array(payload), offset: offset))
        }
        return LogRecovery(records: records, truncatedTail: tail)
    }

    /// Reads the log at `url` without changing it, handing each intact record to `body` in order
    /// (the payload buffer is valid only during the call). Returns the torn tail, if any. When the
    /// file is corrupt in the middle, `body` has seen every record before the damage when this throws.
    public static func forEachRecord(
        at url: URL, maxRecordSize: Int = defaultMaxRecordSize,
        _ body: (_ kind: LogRecord.Kind, _ offset: Int, _ payload: UnsafeRawBufferPointer) -> Void
    ) throws(LogFileError) -> TornTail? {
        let path = url.path(percentEncoded: false)
        let fd = LogWriter.openFile(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LogFileError.system(errno, "open", path) }
        defer { LogWriter.closeFile(fd) }
        let fileSize = try sizeOf(fd, path)
        try checkHeader(fd, path, fileSize)
        let reader = LogReader(fd: fd, path: path, fileSize: fileSize, maxRecordSize: maxRecordSize)
        return try reader.scan(from: LogFormat.fileHeaderSize) { kind, offset, payload in
            body(LogRecord.Kind(rawValue: kind).unsafelyUnwrapped, offset, payload)
        }.tornTail
    }

    /// Cuts the log at `url` at `offset`, discarding every record from there on: the way out of a
    /// ``LogFileError/corruptRecord(offset:reason:)`` (pass the offset it names) when losing the
    /// records after the damage is acceptable. Records before `offset` must all be intact, so
    /// `offset` is always the end of an intact record; otherwise this throws and changes nothing.
    public static func truncate(at url: URL, to offset: Int, maxRecordSize: Int = defaultMaxRecordSize) throws(LogFileError) {
        let path = url.path(percentEncoded: false)
        let fd = LogWriter.openFile(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw LogFileError.system(errno, "open", path) }
        defer { LogWriter.closeFile(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            throw code == EWOULDBLOCK ? .locked(path: path) : LogFileError.system(code, "flock", path)
        }
        let fileSize = try sizeOf(fd, path)
        try checkHeader(fd, path, fileSize)
        guard offset >= LogFormat.fileHeaderSize, offset <= fileSize else {
            throw .corruptRecord(offset: offset, reason: "cannot cut the log there: it is outside the records (\(LogFormat.fileHeaderSize)...\(fileSize))")
        }
        // Scan only the part that stays: it must end exactly at `offset` with no damage.
        let reader = LogReader(fd: fd, path: path, fileSize: offset, maxRecordSize: maxRecordSize)
        let outcome = try reader.scan(from: LogFormat.fileHeaderSize) { _, _, _ in }
        if let tail = outcome.tornTail {
            throw .corruptRecord(offset: tail.offset, reason: "cannot cut the log at \(offset): it is not the end of an intact record")
        }
        guard ftruncate(fd, off_t(offset)) == 0 else { throw LogFileError.system(errno, "ftruncate", path) }
        try LogWriter.syncDescriptor(fd, path)
    }

    // MARK: Writing

    /// Appends a record and returns its offset. Whether it is on disk when this returns depends on
    /// ``fsyncPolicy``. If this throws, the record was not appended (earlier records are unaffected).
    ///
    /// - Throws: ``LogFileError/recordTooLarge(_:)`` for a payload over ``maxRecordSize``,
    ///   ``LogFileError/diskFull(path:)``, or an I/O error.
    @inlinable @discardableResult
    public func append(_ kind: LogRecord.Kind, _ payload: some Collection<UInt8>) throws(LogFileError) -> Int {
        let contiguous = payload.withContiguousStorageIfAvailable { bytes in
            Result { () throws(LogFileError) -> Int in try append(kind: kind, bytes: UnsafeRawBufferPointer(bytes)) }
        }
        if let contiguous { return try contiguous.get() }
        let copy = Array(payload)
        return try copy.withUnsafeBytes { bytes in
            Result { () throws(LogFileError) -> Int in try append(kind: kind, bytes: bytes) }
        }.get()
    }

    /// Appends a record whose payload is in `bytes`; see ``append(_:_:)``.
    @discardableResult
    public func append(kind: LogRecord.Kind, bytes: UnsafeRawBufferPointer) throws(LogFileError) -> Int {
        try checkUsable()
        guard bytes.count <= maxRecordSize, bytes.count <= LogFormat.maxPayload else { throw .recordTooLarge(bytes.count) }
        let offset = writer.end
        try writer.append(kind: kind.rawValue, payload: bytes)
        switch fsyncPolicy {
        case .never:
            break
        case .everyRecord:
            try flushTakingBack(from: offset)
            try syncWritten()
        case .interval:
            if LogClock.now() &- lastSync >= syncInterval {
                try flushTakingBack(from: offset)
                try syncWritten()
            }
        }
        return offset
    }

    /// Flushes; if that fails, drops the record appended at `offset` from the buffer (the append
    /// fails as a whole) and keeps the records before it for a later retry.
    private func flushTakingBack(from offset: Int) throws(LogFileError) {
        do throws(LogFileError) {
            try writer.flush()
        } catch {
            writer.discardBuffered(downTo: offset)
            throw error
        }
    }

    /// Writes buffered records to the file (the OS page cache) without forcing them to disk.
    public func flush() throws(LogFileError) {
        try checkUsable()
        try writer.flush()
    }

    /// Writes buffered records and forces everything written to disk.
    public func sync() throws(LogFileError) {
        try checkUsable()
        try writer.flush()
        try syncWritten()
    }

    /// With ``FsyncPolicy/interval(_:)``: syncs if records are pending and the interval has passed
    /// since the last sync. Call it from a timer so records don't wait for the next append.
    /// Returns whether it synced. Does nothing under the other policies.
    @discardableResult
    public func syncIfDue() throws(LogFileError) -> Bool {
        try checkUsable()
        guard case .interval = fsyncPolicy, writer.buffered > 0 || writer.needsSync,
              LogClock.now() &- lastSync >= syncInterval else { return false }
        try sync()
        return true
    }

    /// Atomically replaces the whole log with one `snapshot` record followed by `tail`.
    ///
    /// Writes a temporary file next to the log, syncs it, renames it over the log and syncs the
    /// directory: after a crash the file is either the old log or the new one, never a mix, and a
    /// leftover temporary file is removed by the next `open`. Records still in the append buffer are
    /// dropped with the history (the snapshot replaces them). If this throws before the rename, the
    /// old log is untouched and still usable.
    public func compact(snapshot: [UInt8], keeping tail: [(LogRecord.Kind, [UInt8])] = []) throws(LogFileError) {
        try checkUsable()
        for payload in [snapshot] + tail.map(\.1) where payload.count > maxRecordSize || payload.count > LogFormat.maxPayload {
            throw .recordTooLarge(payload.count)
        }
        let tempPath = LogFile.compactionTempPath(path)
        let tempFD = LogWriter.openFile(tempPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC)
        guard tempFD >= 0 else { throw LogFileError.system(errno, "open", tempPath) }
        let newWriter: LogWriter
        do throws(LogFileError) {
            if flock(tempFD, LOCK_EX | LOCK_NB) != 0 { throw LogFileError.system(errno, "flock", tempPath) }
            try LogWriter.writeAll(tempFD, tempPath, LogFormat.fileHeader, at: 0)
            newWriter = LogWriter(fd: tempFD, path: path, writtenEnd: LogFormat.fileHeaderSize, bufferCapacity: bufferCapacity)
            try LogWriter.withBytes(snapshot) { (bytes) throws(LogFileError) in
                try newWriter.append(kind: LogRecord.Kind.snapshot.rawValue, payload: bytes)
            }
            for (kind, payload) in tail {
                try LogWriter.withBytes(payload) { (bytes) throws(LogFileError) in try newWriter.append(kind: kind.rawValue, payload: bytes) }
            }
            try newWriter.flush()
            try newWriter.sync()
            if rename(tempPath, path) != 0 { throw LogFileError.system(errno, "rename", path) }
        } catch {
            LogWriter.closeFile(tempFD)
            _ = unlink(tempPath)
            throw error
        }
        // The new file is in place: switch to it, then make the rename itself durable.
        let oldWriter = writer
        writer = newWriter
        LogWriter.closeFile(oldWriter.fd)
        lastSync = LogClock.now()
        try LogFile.syncDirectory(of: path)
    }

    /// Writes buffered records, syncs (unless the policy is ``FsyncPolicy/never``) and closes the
    /// file. The log is closed afterwards even if this throws. Closing twice does nothing.
    public func close() throws(LogFileError) {
        guard !isClosed else { return }
        let wasUsable = unusableReason == nil && writer.failure == nil
        unusableReason = "it was closed"
        defer {
            LogWriter.closeFile(writer.fd)
            isClosed = true
        }
        guard wasUsable else { return }
        try writer.flush()
        if fsyncPolicy != .never && writer.needsSync { try writer.sync() }
    }

    // MARK: Internals

    private func checkUsable() throws(LogFileError) {
        if let reason = unusableReason ?? writer.failure { throw .unusable(path: path, reason: reason) }
    }

    /// Syncs written bytes; a failed fsync leaves the page cache in an unknown state, so the log
    /// refuses further use (reopen it to find out what survived).
    private func syncWritten() throws(LogFileError) {
        guard writer.needsSync else { lastSync = LogClock.now(); return }
        do throws(LogFileError) {
            try writer.sync()
        } catch {
            unusableReason = "fsync failed (\(error)); reopen the log to recover"
            throw error
        }
        lastSync = LogClock.now()
    }

    static func compactionTempPath(_ path: String) -> String { path + ".compact-tmp" }

    private static func sizeOf(_ fd: Int32, _ path: String) throws(LogFileError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw LogFileError.system(errno, "fstat", path) }
        return Int(info.st_size)
    }

    /// Reads up to 16 bytes at the start of the file.
    private static func headerBytes(_ fd: Int32, _ path: String, _ fileSize: Int) throws(LogFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: min(fileSize, LogFormat.fileHeaderSize))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress.unsafelyUnwrapped + done, $0.count - done, off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw LogFileError.system(errno, "read", path)
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }

    /// A new or empty file, or one whose only content is a header cut short by a crash during
    /// creation (a prefix of the header, or zeros), gets a fresh header. Anything else is checked.
    private static func needsInitialHeader(_ fd: Int32, _ path: String, _ fileSize: Int) throws(LogFileError) -> Bool {
        guard fileSize <= LogFormat.fileHeaderSize else { return false }
        let bytes = try headerBytes(fd, path, fileSize)
        let fresh = LogFormat.fileHeader
        return bytes.elementsEqual(fresh.prefix(bytes.count)) && bytes.count < fresh.count || bytes.allSatisfy { $0 == 0 }
    }

    private static func checkHeader(_ fd: Int32, _ path: String, _ fileSize: Int) throws(LogFileError) {
        let bytes = try headerBytes(fd, path, fileSize)
        switch bytes.withUnsafeBytes({ LogFormat.checkFileHeader($0) }) {
        case .valid: return
        case .notALog: throw .badHeader(path: path)
        case .unsupportedVersion(let version): throw .unsupportedVersion(path: path, version: version)
        }
    }

    private static func writeInitialHeader(_ fd: Int32, _ path: String) throws(LogFileError) {
        guard ftruncate(fd, 0) == 0 else { throw LogFileError.system(errno, "ftruncate", path) }
        try LogWriter.writeAll(fd, path, LogFormat.fileHeader, at: 0)
        try LogWriter.syncDescriptor(fd, path)
        try syncDirectory(of: path)
    }

    /// Makes a new directory entry (creation, rename) durable.
    static func syncDirectory(of path: String) throws(LogFileError) {
        let directory = URL(filePath: path).deletingLastPathComponent().path(percentEncoded: false)
        let fd = LogWriter.openFile(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LogFileError.system(errno, "open", directory) }
        defer { LogWriter.closeFile(fd) }
        while fsync(fd) != 0 {
            if errno != EINTR { throw LogFileError.system(errno, "fsync", directory) }
        }
    }
}
