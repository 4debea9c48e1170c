/// What a `QueryHub` asks of each live query it keeps up to date (`LiveQuery` is the one kind).
@MainActor
protocol MaintainedQuery: AnyObject {
    /// Whether objects of class `type` can be in the query's contents.
    func accepts(_ type: ModelObject.Type) -> Bool

    /// Brings the contents up to date with the objects of `rows` (members that changed, joined or
    /// left since the last delivery, each once, all of an accepted class) and with a new window, if
    /// one was set. Returns whether there are changes to deliver; delivers nothing yet.
    func update(_ rows: [QueryRow]) -> Bool

    /// `update` for one object (the common turn), without an array.
    func update(one row: QueryRow) -> Bool

    /// Tells observers of the changes the last `update` found.
    func deliver()
}
