/// The sort keys of one object in a live query, as they were when it was placed: what the entries
/// of a query that sorts by more than one number compare after their inline first key.
final class QueryKeys {
    /// One component per sort criterion, the first criterion's first.
    let components: [QueryKeyComponent]

    init(_ components: [QueryKeyComponent]) {
        self.components = components
    }
}
