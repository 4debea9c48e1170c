/// An incomplete or damaged last stretch of a log file, as a crash in the middle of a write leaves it.
///
/// ``LogFile/open(at:fsync:maxRecordSize:bufferCapacity:preallocation:)`` cuts it off; ``LogFile/read(at:maxRecordSize:)``
/// only reports it.
public struct TornTail: Sendable, Equatable, CustomStringConvertible {
    /// Byte offset where the damaged stretch starts (the end of the last intact record).
    public var offset: Int
    /// How many bytes from `offset` to the end of the file were (or would be) discarded.
    public var discardedBytes: Int
    /// What was wrong, e.g. "payload checksum mismatch".
    public var reason: String

    /// A torn tail of `discardedBytes` bytes at `offset`.
    public init(offset: Int, discardedBytes: Int, reason: String) {
        self.offset = offset
        self.discardedBytes = discardedBytes
        self.reason = reason
    }

    /// What went wrong, in words.
    public var description: String {
        "torn tail at offset \(offset): \(discardedBytes) byte\(discardedBytes == 1 ? "" : "s") discarded (\(reason))"
    }
}
