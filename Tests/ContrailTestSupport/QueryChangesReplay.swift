import Contrail

extension QueryChanges {
    /// `old` with these changes applied as a table view applies a batch update (delete, insert,
    /// move; every other row keeps its order), taking inserted rows from `new`; nil when the changes
    /// are not a valid batch (counts that do not match, an index out of range or used twice, an
    /// update of a removed or moved row).
    package func replayed<Element>(on old: [Element], new: [Element]) -> [Element]? {
        guard oldCount == old.count, newCount == new.count else { return nil }
        let sources = Set(moved.map(\.from)), targets = Set(moved.map(\.to))
        guard sources.count == moved.count, targets.count == moved.count,
              sources.isDisjoint(with: removed), targets.isDisjoint(with: inserted),
              updated.allSatisfy({ $0 < old.count && !removed.contains($0) && !sources.contains($0) }),
              removed.allSatisfy({ $0 < old.count }), inserted.allSatisfy({ $0 < new.count }),
              moved.allSatisfy({ $0.from < old.count && $0.to < new.count }) else { return nil }
        var result: [Element?] = Array(repeating: nil, count: new.count)
        for index in inserted { result[index] = new[index] }
        for move in moved { result[move.to] = old[move.from] }
        var rest = old.indices.filter { !removed.contains($0) && !sources.contains($0) }.map { old[$0] }[...]
        for index in result.indices where result[index] == nil {
            guard let next = rest.popFirst() else { return nil }
            result[index] = next
        }
        guard rest.isEmpty else { return nil }
        return result.map { $0! }
    }
}
