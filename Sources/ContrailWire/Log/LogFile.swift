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
    /// A preallocation chunk that keeps appends from growing the file: 1 MiB (see `LogWriter`).
    public static let appendPreallocation = 1 << 20

    /// Where the log lives.
    public let url: URL
    /// When appended records are forced to disk.
    public let fsyncPolicy: FsyncPolicy
    /// The largest payload accepted by `append` and when reading.
    public let maxRecordSize: Int

    private let path: String
    private let bufferCapacity: Int
    /// Bytes the file is extended by ahead of its records (0: never; see ``LogWriter``).
    private let preallocation: Int
    private var writer: LogWriter
    /// ``LogClock`` time of the last sync.
    private var lastSync: Int64
    /// The sync interval in nanoseconds (``FsyncPolicy/interval(_:)`` only).
    private let syncInterval: Int64
    /// Set once the log must not be used any more (closed, or a sync failed).
    private var unusableReason: String?
    /// Whether `close()` closed the descriptor.
    private var isClosed = false
    /// The log's end right after the last sync marker was written (or when it was opened): a sync
    /// that made nothing new durable writes no marker.
    private var markedEnd: Int
    /// A sync marker another thread's sync is owed (the length it made durable; 0: none): written
    /// in front of the next appended record, in the same write, so that thread never writes (and
    /// never holds up an append with a write of its own). See ``didSync(_:error:)``.
    private var pendingMarkerEnd = 0
    /// Counts the files this log has written to (a compaction switches to a new one).
    private var generation = 0
    /// The log file's inode (for ``SyncedLength``).
    private var inode: UInt64

    private init(url: URL, path: String, writer: LogWriter, fsync: FsyncPolicy, maxRecordSize: Int, bufferCapacity: Int, preallocation: Int) {
        self.url = url
        self.path = path
        self.writer = writer
        self.fsyncPolicy = fsync
        self.maxRecordSize = maxRecordSize
        self.bufferCapacity = bufferCapacity
        self.preallocation = preallocation
        self.lastSync = LogClock.now()
        self.markedEnd = writer.end
        self.inode = SyncedLength.inode(of: writer.fd)
        if case .interval(let interval) = fsync { syncInterval = LogClock.nanoseconds(interval) } else { syncInterval = 0 }
    }

    deinit {
        // Best effort for a log that was never closed; call close() to see errors.
        if unusableReason == nil && writer.failure == nil {
            try? writer.flush()
            if fsyncPolicy != .never && writer.needsSync { try? syncAndMark() }
            writer.trimPreallocation()
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
    ///   - preallocation: extend the file this many bytes at a time ahead of its records, so
    ///     appends never grow it (0: don't; ``appendPreallocation`` is the usual chunk). `close()`
    ///     trims what no record reached; after a crash it stays and reads as the end of the records.
    /// - Throws: ``LogFileError/badHeader(path:)``, ``LogFileError/corruptRecord(offset:reason:)``
    ///   for damage in the middle, ``LogFileError/locked(path:)``, or an I/O error.
    public static func open(
        at url: URL, fsync: FsyncPolicy = .everyRecord, maxRecordSize: Int = defaultMaxRecordSize,
        bufferCapacity: Int = defaultBufferCapacity, preallocation: Int = 0
    ) throws(LogFileError) -> (LogFile, LogRecovery) {
        var records: [LogRecord] = []
        let (log, tail) = try open(at: url, fsync: fsync, maxRecordSize: maxRecordSize, bufferCapacity: bufferCapacity,
                                   preallocation: preallocation) { kind, offset, payload in
            records.append(LogRecord(kind: kind, payload: Array(payload), offset: offset))
        }
        return (log, LogRecovery(records: records, truncatedTail: tail))
    }

    /// Like ``open(at:fsync:maxRecordSize:bufferCapacity:preallocation:)``, but hands each record
    /// to `visit` without copying its payload (the buffer is valid only during the call) instead
    /// of collecting them. Returns the torn tail that was cut off, if any.
    public static func open(
        at url: URL, fsync: FsyncPolicy = .everyRecord, maxRecordSize: Int = defaultMaxRecordSize,
        bufferCapacity: Int = defaultBufferCapacity, preallocation: Int = 0,
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
            _ = unlink(SyncedLength.path(of: path))  // a side file of an earlier log (whose inode may be reused)
            try writeInitialHeader(fd, path)
            fileSize = LogFormat.fileHeaderSize
        } else {
            try checkHeader(fd, path, fileSize)
        }
        // A compaction that crashed before its rename leaves its temp file; we hold the lock, so it is stale.
        _ = unlink(compactionTempPath(path))

        let reader = LogReader(fd: fd, path: path, fileSize: fileSize, maxRecordSize: maxRecordSize)
        let knownSynced = SyncedLength.read(logPath: path, inode: SyncedLength.inode(of: fd))
        let outcome = try reader.scan(from: LogFormat.fileHeaderSize, knownSynced: knownSynced) { kind, offset, payload in
            visit(LogRecord.Kind(rawValue: kind).unsafelyUnwrapped, offset, payload)  // the reader only yields known kinds
        }
        if outcome.tornTail != nil {
            guard ftruncate(fd, off_t(outcome.end)) == 0 else { throw LogFileError.system(errno, "ftruncate", path) }
            try LogWriter.syncDescriptor(fd, path)
            fileSize = outcome.end
        }
        // A zeroed preallocated part after the records (a crash before `close` trimmed it) is reused.
        let writer = LogWriter(fd: fd, path: path, writtenEnd: outcome.end, bufferCapacity: bufferCapacity,
                               preallocation: preallocation, fileSize: fileSize)
        handedOver = true
        let log = LogFile(url: url, path: path, writer: writer, fsync: fsync, maxRecordSize: maxRecordSize,
                          bufferCapacity: bufferCapacity, preallocation: preallocation)
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
        let knownSynced = SyncedLength.read(logPath: path, inode: SyncedLength.inode(of: fd))
        return try reader.scan(from: LogFormat.fileHeaderSize, knownSynced: knownSynced) { kind, offset, payload in
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
        // What was synced past the cut is gone by choice now: lower the recorded synced length.
        let inode = SyncedLength.inode(of: fd)
        if SyncedLength.read(logPath: path, inode: inode) > offset {
            let syncedFD = SyncedLength.openForWriting(logPath: path)
            SyncedLength.write(syncedFD, inode: inode, length: offset)
            if syncedFD >= 0 { _ = Platform.close(syncedFD) }
        }
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
        // The owed marker goes in the same write as a record that fits the buffer with it (a larger
        // record is written on its own, so the marker waits for the next small one, or `close`).
        if pendingMarkerEnd > 0, 2 * LogFormat.recordHeaderSize + LogFormat.syncMarkerPayloadSize + bytes.count <= bufferCapacity {
            bufferPendingSyncMarker()
        }
        let offset = writer.end
        try writer.append(kind: kind.rawValue, payload: bytes)
        switch fsyncPolicy {
        case .never:
            break
        case .everyRecord:
            try flushTakingBack(from: offset)
            try syncWritten(marking: false)
        case .interval:
            if LogClock.now() &- lastSync >= syncInterval {
                try flushTakingBack(from: offset)
                try syncWritten(marking: false)
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
        try syncWritten(marking: true)
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
    /// Writes a temporary file next to the log, syncs it, reads it back to verify it, keeps the
    /// current file as the previous generation (``previousGenerationURL(of:)``, a hard link, best
    /// effort), renames the new file over the log and syncs the directory: after a crash the file
    /// is either the old log or the new one, never a mix, and a leftover temporary file is removed
    /// by the next `open`. Records still in the append buffer are dropped with the history (the
    /// snapshot replaces them). If this throws before the rename, the old log is untouched and
    /// still usable. O(size of the new file).
    public func compact(snapshot: [UInt8], keeping tail: [(LogRecord.Kind, [UInt8])] = []) throws(LogFileError) {
        try checkUsable()
        let prepared = try prepareCompaction(snapshot: snapshot, keeping: tail)
        try finishCompaction(prepared, carryingFrom: nil)
        try LogFile.syncDirectory(of: path)
    }

    /// A new generation of a log, written and synced next to it but not yet in place.
    package final class PreparedCompaction {
        fileprivate let writer: LogWriter
        fileprivate let tempPath: String
        fileprivate var isInstalled = false
        /// The length of the new file that was synced (before records are carried over).
        fileprivate var syncedEnd = 0

        fileprivate init(writer: LogWriter, tempPath: String) {
            self.writer = writer
            self.tempPath = tempPath
        }

        deinit {
            if !isInstalled {
                LogWriter.closeFile(writer.fd)
                _ = unlink(tempPath)
            }
        }
    }

    /// The first, slow half of ``compact(snapshot:keeping:)``: writes the snapshot and `tail` to
    /// the temporary file, syncs it and reads it back. Touches only the temporary file and this
    /// log's immutable settings, so it may run on another thread while appends go on (the caller
    /// then installs it with ``finishCompaction(_:carryingFrom:)``). O(size of the new file).
    package func prepareCompaction(snapshot: [UInt8], keeping tail: [(LogRecord.Kind, [UInt8])]) throws(LogFileError) -> PreparedCompaction {
        for payload in [snapshot] + tail.map(\.1) where payload.count > maxRecordSize || payload.count > LogFormat.maxPayload {
            throw .recordTooLarge(payload.count)
        }
        let tempPath = LogFile.compactionTempPath(path)
        let tempFD = LogWriter.openFile(tempPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC)
        guard tempFD >= 0 else { throw LogFileError.system(errno, "open", tempPath) }
        let newWriter = LogWriter(fd: tempFD, path: path, writtenEnd: LogFormat.fileHeaderSize, bufferCapacity: bufferCapacity,
                                  preallocation: preallocation)
        let prepared = PreparedCompaction(writer: newWriter, tempPath: tempPath)
        if flock(tempFD, LOCK_EX | LOCK_NB) != 0 { throw LogFileError.system(errno, "flock", tempPath) }
        try LogWriter.writeAll(tempFD, tempPath, LogFormat.fileHeader, at: 0)
        try LogWriter.withBytes(snapshot) { (bytes) throws(LogFileError) in
            try newWriter.append(kind: LogRecord.Kind.snapshot.rawValue, payload: bytes)
        }
        for (kind, payload) in tail {
            try LogWriter.withBytes(payload) { (bytes) throws(LogFileError) in try newWriter.append(kind: kind.rawValue, payload: bytes) }
        }
        // A marker for the whole new file: everything before it is synced with it.
        var end = UInt64(newWriter.end).littleEndian
        try withUnsafeBytes(of: &end) { (bytes) throws(LogFileError) in
            try newWriter.append(kind: LogFormat.syncMarkerKind, payload: bytes)
        }
        try newWriter.flush()
        try newWriter.sync()
        prepared.syncedEnd = newWriter.writtenEnd
        // Verify: the new file must read back as exactly what was written.
        let reader = LogReader(fd: tempFD, path: tempPath, fileSize: newWriter.writtenEnd, maxRecordSize: maxRecordSize)
        var count = 0
        let outcome = try reader.scan(from: LogFormat.fileHeaderSize) { _, _, _ in count += 1 }
        guard outcome.tornTail == nil, outcome.end == newWriter.writtenEnd, count == 1 + tail.count else {
            throw .corruptRecord(offset: outcome.end, reason: "the compacted file \(tempPath) did not read back as written (\(count) of \(1 + tail.count) records)")
        }
        return prepared
    }

    /// The second half of ``compact(snapshot:keeping:)``: copies the records appended since
    /// `offset` (the log's ``size`` when the snapshot was taken; nil: none) to the new file, keeps
    /// the current file as the previous generation, renames the new file into place and switches
    /// to it. Does not sync (the copied records are synced with the next ``sync()``; call
    /// ``syncDirectory(of:)`` to make the rename durable). O(bytes copied).
    package func finishCompaction(_ prepared: PreparedCompaction, carryingFrom offset: Int?) throws(LogFileError) {
        try checkUsable()
        try writer.flush()
        let newWriter = prepared.writer
        if let offset, offset < writer.writtenEnd {
            try carryRecords(from: offset, into: newWriter)
        }
        let previous = LogFile.previousGenerationURL(of: url).path(percentEncoded: false)
        _ = unlink(previous)
        _ = link(path, previous)  // best effort: a file system without hard links keeps no previous generation
        if rename(prepared.tempPath, path) != 0 { throw LogFileError.system(errno, "rename", path) }
        prepared.isInstalled = true
        // The new file is in place: switch to it.
        let oldWriter = writer
        writer = newWriter
        LogWriter.closeFile(oldWriter.fd)
        generation += 1
        inode = SyncedLength.inode(of: newWriter.fd)
        recordSyncedLength(prepared.syncedEnd)
        markedEnd = prepared.syncedEnd  // records carried over get a marker with their next sync
        pendingMarkerEnd = 0  // it named a length of the old file
        lastSync = LogClock.now()
    }

    /// Copies the records (not the sync markers, whose lengths name the old file) from `offset` to
    /// the end of the current file to the end of `newWriter`'s, unsynced.
    private func carryRecords(from offset: Int, into newWriter: LogWriter) throws(LogFileError) {
        let reader = LogReader(fd: writer.fd, path: path, fileSize: writer.writtenEnd, maxRecordSize: maxRecordSize)
        var failure: LogFileError?
        let outcome = try reader.scan(from: offset) { kind, _, payload in
            guard failure == nil else { return }
            do throws(LogFileError) { try newWriter.append(kind: kind, payload: payload) } catch { failure = error }
        }
        if let failure { throw failure }
        if let torn = outcome.tornTail { throw .corruptRecord(offset: torn.offset, reason: "records to carry into the compacted file are damaged: \(torn.reason)") }
        try newWriter.flush()
    }

    /// Where a compaction keeps the log it replaced (one generation): `NAME.previous`.
    public static func previousGenerationURL(of url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: url.lastPathComponent + ".previous", directoryHint: .notDirectory)
    }

    // MARK: Syncing from another thread

    /// What ``syncPoint()`` hands to a thread that syncs while appends go on.
    package struct SyncPoint: Sendable {
        fileprivate let fd: Int32
        fileprivate let path: String
        fileprivate let generation: Int
        fileprivate let inode: UInt64
        /// The log's length this sync makes durable.
        package let end: Int
    }

    /// Writes out buffered records and returns what ``sync(_:)`` needs to make them durable
    /// without holding up appends. Use it, `sync(_:)` and ``didSync(_:)`` from threads that take
    /// turns (a lock) for everything but `sync(_:)` itself; the log must not be compacted or
    /// closed between `syncPoint()` and `didSync(_:)`.
    package func syncPoint() throws(LogFileError) -> SyncPoint {
        try checkUsable()
        try writer.flush()
        return SyncPoint(fd: writer.fd, path: path, generation: generation, inode: inode, end: writer.writtenEnd)
    }

    /// `fdatasync` for a ``SyncPoint``, safe while another thread appends. Blocks on the disk.
    /// Then records the synced length in the ``SyncedLength`` side file (no lock needed: it is
    /// its own file), so ``didSync(_:error:)`` only has the sync marker to append.
    package static func sync(_ point: SyncPoint) throws(LogFileError) {
        try LogWriter.syncDescriptor(point.fd, point.path)
        let syncedFD = SyncedLength.openForWriting(logPath: point.path)
        SyncedLength.write(syncedFD, inode: point.inode, length: point.end)
        if syncedFD >= 0 { _ = Platform.close(syncedFD) }
    }

    /// Brings the `length` bytes after `point`'s end into the page cache (see
    /// `Platform.prefetch`), so the appends that follow find their pages there instead of
    /// allocating and zeroing them on the appending thread. For the thread that syncs, between
    /// `syncPoint()` and ``didSync(_:error:)``, without the lock. A hint: the file is not changed.
    package static func prefetch(after point: SyncPoint, length: Int) {
        Platform.prefetch(point.fd, offset: point.end, length: length)
    }

    /// Records that `point` was synced, or, with `error`, that the sync failed (the log is then
    /// unusable, as after a failed ``sync()``). Writes a sync marker after a success.
    package func didSync(_ point: SyncPoint, error: LogFileError? = nil) {
        guard point.generation == generation else { return }
        if let error {
            unusableReason = "fsync failed (\(error)); reopen the log to recover"
            return
        }
        lastSync = LogClock.now()
        writer.didSync(through: point.end)
        // `sync(_:)` recorded the length in the side file; the marker goes out with the next append.
        if point.end > markedEnd { pendingMarkerEnd = max(pendingMarkerEnd, point.end) }
    }

    /// Writes the sync marker the last ``didSync(_:error:)`` left for the next append, now (for a
    /// writer that closes: the file is then left marked). Best effort, as every marker.
    package func writePendingSyncMarker() {
        guard pendingMarkerEnd > 0, unusableReason == nil else { return }
        let end = pendingMarkerEnd
        pendingMarkerEnd = 0
        if (try? writer.flush()) != nil { writeSyncMarker(through: end, recordingLength: false) }
    }

    /// Puts the pending sync marker into the append buffer, ahead of the record being appended
    /// (both go out in one write). Best effort: a marker that does not fit is left out.
    private func bufferPendingSyncMarker() {
        let end = pendingMarkerEnd
        pendingMarkerEnd = 0
        guard end > markedEnd, writer.failure == nil else { return }
        var value = UInt64(end).littleEndian
        let buffered = withUnsafeBytes(of: &value) { bytes in
            (try? writer.append(kind: LogFormat.syncMarkerKind, payload: bytes)) != nil
        }
        if buffered { markedEnd = writer.end }
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
        if pendingMarkerEnd > 0 { bufferPendingSyncMarker() }
        try writer.flush()
        if fsyncPolicy != .never && writer.needsSync { try syncAndMark() }
        writer.trimPreallocation()
    }

    /// Syncs, writes a sync marker and syncs it too (for closing: the file is left fully marked).
    private func syncAndMark() throws(LogFileError) {
        let end = writer.writtenEnd
        try writer.sync()
        if writeSyncMarker(through: end) { try writer.sync() }
    }

    /// Rewrites the ``SyncedLength`` side file: the first `end` bytes of this file are synced.
    /// Opened and closed each time (once per sync), so a log holds one descriptor, not two.
    private func recordSyncedLength(_ end: Int) {
        let syncedFD = SyncedLength.openForWriting(logPath: path)
        SyncedLength.write(syncedFD, inode: inode, length: end)
        if syncedFD >= 0 { _ = Platform.close(syncedFD) }
    }

    /// Appends a sync marker saying the first `end` bytes are on disk (see ``LogFormat``), if
    /// anything but a marker was written since the last one. Best effort: a marker that cannot be
    /// written is left out (it protects, it holds no data). A marker alone does not make the log
    /// need a sync: it is synced with the next records (or by `close`). Returns whether it wrote one.
    @discardableResult
    private func writeSyncMarker(through end: Int, recordingLength: Bool = true) -> Bool {
        guard end > markedEnd, writer.buffered == 0, writer.failure == nil else { return false }
        if recordingLength { recordSyncedLength(end) }
        let hadUnsynced = writer.needsSync  // records another thread appended during the sync
        var value = UInt64(end).littleEndian
        let written = withUnsafeBytes(of: &value) { bytes in
            do throws(LogFileError) {
                try writer.append(kind: LogFormat.syncMarkerKind, payload: bytes)
                try writer.flush()
                return true
            } catch {
                writer.discardBuffered(downTo: end)
                return false
            }
        }
        if written && !hadUnsynced { writer.didSync(through: writer.writtenEnd) }
        markedEnd = writer.end
        return written
    }

    // MARK: Internals

    private func checkUsable() throws(LogFileError) {
        if let reason = unusableReason ?? writer.failure { throw .unusable(path: path, reason: reason) }
    }

    /// Syncs written bytes; a failed fsync leaves the page cache in an unknown state, so the log
    /// refuses further use (reopen it to find out what survived).
    /// With `marking`, a sync marker follows (explicit syncs: a policy's sync on every append
    /// does not double the writes; `close` marks the end).
    private func syncWritten(marking: Bool) throws(LogFileError) {
        guard writer.needsSync else { lastSync = LogClock.now(); return }
        let end = writer.writtenEnd
        do throws(LogFileError) {
            try writer.sync()
        } catch {
            unusableReason = "fsync failed (\(error)); reopen the log to recover"
            throw error
        }
        lastSync = LogClock.now()
        if marking { writeSyncMarker(through: end) }
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
    package static func syncDirectory(of path: String) throws(LogFileError) {
        let directory = URL(filePath: path).deletingLastPathComponent().path(percentEncoded: false)
        let fd = LogWriter.openFile(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LogFileError.system(errno, "open", directory) }
        defer { LogWriter.closeFile(fd) }
        while fsync(fd) != 0 {
            if errno != EINTR { throw LogFileError.system(errno, "fsync", directory) }
        }
    }
}
