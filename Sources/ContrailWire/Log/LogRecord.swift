/// One record of a ``LogFile``: a kind tag and opaque payload bytes.
package struct LogRecord: Sendable, Equatable {
    /// What a record holds. The storage layer only stores the tag; meaning belongs to the layer above.
    public enum Kind: UInt8, Sendable {
        /// A full state image; history before it is no longer needed.
        case snapshot = 1
        /// One change set.
        case changeSet = 2
    }

    /// The record's kind.
    public var kind: Kind
    /// The record's payload, exactly as appended.
    public var payload: [UInt8]
    /// Byte offset of the record (its header) in the file.
    public var offset: Int

    /// A record of `kind` holding `payload`, found at `offset`.
    public init(kind: Kind, payload: [UInt8], offset: Int) {
        self.kind = kind
        self.payload = payload
        self.offset = offset
    }
}
