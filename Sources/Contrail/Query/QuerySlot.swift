/// What one query keeps of one object (`QueryHub.slot(row:column:)`): the encoded first key of
/// the object's entry in the query's tree and its tag, or `absent` when the object is not a match.
struct QuerySlot {
    var key: UInt64
    /// The entry's `tag` (0 or 1), or `QuerySlot.absent`.
    var tag: UInt8

    /// The tag of a slot whose object is not a match.
    static let absent: UInt8 = 2

    /// The slot of an object that is not a match.
    static let none = QuerySlot(key: 0, tag: absent)

    /// Whether the object is a match.
    var isMatch: Bool { tag != Self.absent }
}
