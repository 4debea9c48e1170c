import ContrailSupport

/// Reads the records of an open log file front to back through one large window buffer
/// (`pread` in 1 MiB chunks), so scanning allocates nothing per record.
///
/// Classification (see ``LogFormat``): a record that is incomplete or fails a checksum ends the
/// scan. If no intact record starts anywhere after it, it is a torn tail; otherwise the file is
/// corrupt in the middle and the scan throws ``LogFileError/corruptRecord(offset:reason:)``.
/// Zeros from a record boundary to the end of the file (at least a record header's worth) are no
/// record at all (the part a ``LogWriter`` preallocated and no append reached): the records end
/// there, unless that part was synced (then the end was lost: damage).
/// Lengths are checked against the file size and `maxRecordSize` before anything is loaded, so a
/// damaged length never causes a large allocation.
final class LogReader {
    /// What a scan ended with.
    struct Outcome {
        /// The offset just after the last intact record.
        var end: Int
        /// The damaged stretch after `end`, if any.
        var tornTail: TornTail?
        /// The largest synced length an intact sync marker named (0 if none).
        var syncedEnd = 0
    }

    private let fd: Int32
    private let path: String
    private var fileSize: Int
    private let maxRecordSize: Int
    private var window: UnsafeMutableRawBufferPointer
    /// File offset of `window[0]`.
    private var windowStart = 0
    /// Valid bytes in `window`.
    private var windowCount = 0

    static let chunkSize = 1 << 20

    init(fd: Int32, path: String, fileSize: Int, maxRecordSize: Int) {
        self.fd = fd
        self.path = path
        self.fileSize = fileSize
        self.maxRecordSize = maxRecordSize
        let capacity = max(4096, min(fileSize, LogReader.chunkSize))
        window = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { window.deallocate() }

    /// Calls `body` with every intact record (kind byte, offset, payload valid only during the call).
    /// Sync markers are read (they raise ``Outcome/syncedEnd``) but not handed to `body`.
    /// `knownSynced` is a length known to be synced from elsewhere (``SyncedLength``), 0 if none.
    func scan(from start: Int, knownSynced: Int = 0, _ body: (UInt8, Int, UnsafeRawBufferPointer) -> Void) throws(LogFileError) -> Outcome {
        var offset = start
        var syncedEnd = knownSynced
        while offset < fileSize {
            switch try inspect(at: offset) {
            case .intact(let kind, let next, let payload):
                if kind == LogFormat.syncMarkerKind {
                    guard payload.count == LogFormat.syncMarkerPayloadSize else {
                        throw .corruptRecord(offset: offset, reason: "a sync marker of \(payload.count) bytes (expected \(LogFormat.syncMarkerPayloadSize))")
                    }
                    let value = UInt64(littleEndian: payload.loadUnaligned(as: UInt64.self))
                    syncedEnd = max(syncedEnd, Int(clamping: value))
                } else {
                    body(kind, offset, payload)
                }
                offset = next
            case .unreadable(let reason):
                throw .corruptRecord(offset: offset, reason: reason)
            case .damaged(let reason, let headerKind):
                if try isZeroed(from: offset) {
                    // A preallocated part (LogWriter) that no record reached: the records end here,
                    // as if the file did; unless that part was synced (its records were lost).
                    if offset < syncedEnd {
                        throw .corruptRecord(offset: offset, reason: "the file is zeros from offset \(offset) on, but its first \(syncedEnd) bytes were synced: its end was lost")
                    }
                    return Outcome(end: offset, tornTail: nil, syncedEnd: syncedEnd)
                }
                if let following = try firstIntactRecord(after: offset) {
                    throw .corruptRecord(offset: offset, reason: "\(reason); an intact record follows at offset \(following)")
                }
                if offset < syncedEnd {
                    throw .corruptRecord(offset: offset, reason: "\(reason) in the part of the file that was synced (the first \(syncedEnd) bytes): damage, not a torn write")
                }
                if headerKind == LogRecord.Kind.snapshot.rawValue {
                    throw .corruptRecord(offset: offset, reason: "\(reason) in a snapshot record (snapshots are synced before they are renamed into place): damage, not a torn write")
                }
                return Outcome(end: offset, tornTail: TornTail(offset: offset, discardedBytes: fileSize - offset, reason: reason), syncedEnd: syncedEnd)
            }
        }
        if offset < syncedEnd {
            throw .corruptRecord(offset: offset, reason: "the file ends at offset \(offset), but its first \(syncedEnd) bytes were synced: its end was lost")
        }
        return Outcome(end: offset, tornTail: nil, syncedEnd: syncedEnd)
    }

    private enum Inspection {
        /// A good record; `payload` points into the window.
        case intact(kind: UInt8, next: Int, payload: UnsafeRawBufferPointer)
        /// Checksums hold but the record can't be used here (unknown kind, over the size limit).
        case unreadable(String)
        /// Incomplete or failing a checksum: torn or corrupt. `kind` is the record's kind when its
        /// header is intact.
        case damaged(String, kind: UInt8?)
    }

    private func inspect(at offset: Int) throws(LogFileError) -> Inspection {
        let headerSize = LogFormat.recordHeaderSize
        guard let headerBytes = try load(offset, headerSize) else {
            return .damaged("incomplete record header (\(fileSize - offset) of \(headerSize) bytes)", kind: nil)
        }
        let header = LogFormat.RecordHeader(headerBytes)
        guard header.isIntact else { return .damaged("record header checksum mismatch", kind: nil) }
        guard header.length <= maxRecordSize else {
            return .unreadable("record length \(header.length) exceeds the limit of \(maxRecordSize) bytes")
        }
        guard LogRecord.Kind(rawValue: header.kind) != nil || header.kind == LogFormat.syncMarkerKind else {
            return .unreadable("unknown record kind \(header.kind)")
        }
        let total = headerSize + header.length
        guard total <= fileSize - offset else {
            return .damaged("incomplete record (\(fileSize - offset) of \(total) bytes)", kind: header.kind)
        }
        guard let bytes = try load(offset, total) else {
            return .damaged("incomplete record (file shrank while reading)", kind: header.kind)
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
        guard header.payloadMatches(payload) else { return .damaged("payload checksum mismatch", kind: header.kind) }
        return .intact(kind: header.kind, next: offset + total, payload: payload)
    }

    /// Whether every byte from `offset` to the end of the file is zero, and there are at least a
    /// record header's worth (no record header is all zeros, so a shorter run may be the start of
    /// a record a crash cut: a torn tail, as before preallocation).
    private func isZeroed(from offset: Int) throws(LogFileError) -> Bool {
        guard fileSize - offset >= LogFormat.recordHeaderSize else { return false }
        var position = offset
        while position < fileSize {
            guard let bytes = try load(position, min(window.count, fileSize - position)) else { return false }
            // Word by word, then the bytes after the last whole word.
            let words = bytes.count / 8
            for index in 0..<words where bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { return false }
            for index in (words * 8)..<bytes.count where bytes[index] != 0 { return false }
            position += bytes.count
        }
        return true
    }

    /// The offset of the first intact record (both checksums hold) starting after `offset`, if any.
    private func firstIntactRecord(after offset: Int) throws(LogFileError) -> Int? {
        let headerSize = LogFormat.recordHeaderSize
        var candidate = offset + 1
        while candidate + headerSize <= fileSize {
            guard let headerBytes = try load(candidate, headerSize) else { return nil }
            let length = Int(LogFormat.loadLE(headerBytes, 0))
            if length <= fileSize - candidate - headerSize && length <= maxRecordSize {
                let header = LogFormat.RecordHeader(headerBytes)
                if header.isIntact, let bytes = try load(candidate, headerSize + length),
                   header.payloadMatches(UnsafeRawBufferPointer(rebasing: bytes[headerSize...])) {
                    return candidate
                }
            }
            candidate += 1
        }
        return nil
    }

    /// The `count` bytes at file offset `offset`, or `nil` if the file ends before them.
    /// Only moves forward; the returned pointer is valid until the next call.
    private func load(_ offset: Int, _ count: Int) throws(LogFileError) -> UnsafeRawBufferPointer? {
        if offset >= windowStart && offset + count <= windowStart + windowCount {
            let from = offset - windowStart
            return UnsafeRawBufferPointer(rebasing: window[from..<(from + count)])
        }
        guard count <= fileSize - offset else { return nil }
        // Keep the part of the request already in the window, move it to the front, read the rest.
        var kept = 0
        if offset >= windowStart && offset < windowStart + windowCount {
            kept = windowStart + windowCount - offset
        }
        if count > window.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, window.count * 2), alignment: 16)
            if kept > 0, let source = window.baseAddress {
                grown.baseAddress?.copyMemory(from: source + (offset - windowStart), byteCount: kept)
            }
            window.deallocate()
            window = grown
        } else if kept > 0, let base = window.baseAddress {
            memmove(base, base + (offset - windowStart), kept)
        }
        windowStart = offset
        windowCount = kept
        let wanted = min(window.count, fileSize - offset)
        while windowCount < wanted {
            let base = window.baseAddress.unsafelyUnwrapped + windowCount
            let n = pread(fd, base, wanted - windowCount, off_t(offset + windowCount))
            if n < 0 {
                if errno == EINTR { continue }
                throw LogFileError.system(errno, "read", path)
            }
            if n == 0 {
                fileSize = offset + windowCount  // the file shrank under us: treat what we have as the end
                break
            }
            windowCount += n
        }
        guard count <= windowCount else { return nil }
        return UnsafeRawBufferPointer(rebasing: window[0..<count])
    }
}
