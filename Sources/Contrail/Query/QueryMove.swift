/// One object that stayed in a query's contents and changed its place.
public struct QueryMove: Equatable, Hashable, Sendable {
    /// Its index in the old contents.
    public var from: Int
    /// Its index in the new contents.
    public var to: Int

    /// A move from old index `from` to new index `to`.
    public init(from: Int, to: Int) {
        self.from = from
        self.to = to
    }
}
