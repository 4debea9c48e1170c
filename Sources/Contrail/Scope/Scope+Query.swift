/// Live queries over a scope's objects.
extension Scope {
    /// Opens a live query: the scope's objects of class `type` (subclasses included) that pass
    /// `filter`, ordered by `sort` (then by uuid), in `window` (offsets into the sorted matches; nil
    /// for all of them). The query keeps itself up to date as objects change, join and leave the
    /// scope, and tells its observers once per turn what moved (see ``LiveQuery``).
    ///
    /// ```swift
    /// let open = scope.query(Task.self, where: { !$0.done }, sortedBy: .descending(\.created), window: 0..<50)
    /// ```
    /// The filter is a closure rather than a Foundation `#Predicate`: a `#Predicate` stores its key
    /// paths as `Sendable` values, and key paths to a model's properties are main-actor isolated, so
    /// it does not compile for models. The query is freed with the last reference the app holds.
    /// O(n log n) for the n objects of the scope.
    public func query<Model: ModelObject>(_ type: Model.Type, where filter: @escaping @MainActor (Model) -> Bool = { _ in true },
                                          sortedBy sort: QuerySort<Model>..., window: Range<Int>? = nil) -> LiveQuery<Model> {
        let hub = queryHub ?? QueryHub(host: self)
        queryHub = hub
        return LiveQuery(host: self, hub: hub, objects: objects.values, filter: filter, sort: sort, window: window)
    }
}
