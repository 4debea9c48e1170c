/// What ``ContrailServer/compactScope(_:)`` did: the scope's log before and after it was replaced
/// by one snapshot record.
public struct CompactionReport: Sendable, Equatable {
    /// The scope.
    public var scope: String
    /// The log's size in bytes before.
    public var bytesBefore: Int
    /// The log's size in bytes after (its snapshot record and the file header).
    public var bytesAfter: Int
    /// The scope's object count.
    public var objects: Int
}
