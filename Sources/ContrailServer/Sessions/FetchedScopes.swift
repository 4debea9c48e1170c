import ContrailSupport

/// The scopes one session fetched, by the scope index each was given (indices are never reused),
/// each with whether the session may write it (its grants, checked once at fetch).
///
/// One array in index order rather than two dictionaries (by index and by name): a session almost
/// always holds one scope or a few, and a server holds many idle sessions, each paying for these
/// collections' storage. Lookup by index is a binary search, O(log n); by name, O(n), only on fetch.
struct FetchedScopes {
    private var entries: [(index: Int, scope: any HostedScope, writable: Bool)] = []
    private var nextIndex = 0

    /// How many scopes the session holds.
    var count: Int { entries.count }

    /// Every scope the session holds.
    var all: [any HostedScope] { entries.map(\.scope) }

    /// The scope given `index`, if the session still holds it.
    subscript(index: Int) -> (any HostedScope)? {
        position(of: index).map { entries[$0].scope }
    }

    /// The index and scope of the scope named `name`, if the session holds it.
    func named(_ name: String) -> (index: Int, scope: any HostedScope)? {
        entries.first { $0.scope.name == name }.map { ($0.index, $0.scope) }
    }

    /// The scope given `index` and whether the session may write it, if the session holds it.
    func entry(index: Int) -> (scope: any HostedScope, writable: Bool)? {
        position(of: index).map { (entries[$0].scope, entries[$0].writable) }
    }

    /// Adds `scope` under the next index, which it returns.
    mutating func add(_ scope: any HostedScope, writable: Bool) -> Int {
        let index = nextIndex
        nextIndex += 1
        entries.append((index, scope, writable))
        return index
    }

    /// Removes and returns the scope given `index`, if the session holds it.
    mutating func remove(index: Int) -> (any HostedScope)? {
        guard let position = position(of: index) else { return nil }
        return entries.remove(at: position).scope
    }

    private func position(of index: Int) -> Int? {
        let position = entries.partitioningIndex { $0.index >= index }
        return position < entries.count && entries[position].index == index ? position : nil
    }
}
