/// The three-way merge of a collection of references (PROTOCOL.md §8.4): the edit from `base` to
/// `new` (removals, inserts, moves) applied to `current`, so concurrent edits of one collection all
/// survive. Clients and servers use the same function, so they reach the same order.
///
/// ```swift
/// CollectionMerge.merge(base: [a], new: [a, b], current: [a, c])   // [a, b, c]
/// ```
public enum CollectionMerge {
    /// Applies the edit `base → new` to `current`.
    ///
    /// - Elements of `base` missing from `new` are removed from `current`.
    /// - When `new` reorders elements it shares with `base`, those elements take `new`'s order in
    ///   the places they occupy in `current`.
    /// - Elements of `new` missing from `base` are inserted after their nearest predecessor in `new`
    ///   that is in the result (at the front when there is none), unless already present.
    ///
    /// Complexity: O(n) expected in the total length.
    public static func merge<Element: Hashable>(base: [Element], new: [Element], current: [Element]) -> [Element] {
        if base == new { return current }
        if base == current { return new }
        let newSet = Set(new)
        let baseSet = Set(base)
        var result = current.filter { !baseSet.contains($0) || newSet.contains($0) }
        // Moves: the kept elements of the edit follow the edit's order.
        let shared = new.filter { baseSet.contains($0) }
        let sharedSet = Set(shared)
        let baseOrder = base.filter { sharedSet.contains($0) }
        if baseOrder != shared {
            let present = Set(result)
            var ordered = shared.filter { present.contains($0) }.makeIterator()
            for position in result.indices where sharedSet.contains(result[position]) {
                if let next = ordered.next() { result[position] = next }
            }
        }
        // Inserts, each after the nearest preceding element of `new` that is in the result.
        let present = Set(result)
        var after: [Element?: [Element]] = [:]
        var anchor: Element?
        var inserted = Set<Element>()
        for element in new {
            if present.contains(element) {
                anchor = element
            } else if !baseSet.contains(element), inserted.insert(element).inserted {
                after[anchor, default: []].append(element)
            }
        }
        guard !after.isEmpty else { return result }
        var merged: [Element] = []
        merged.reserveCapacity(result.count + inserted.count)
        if let front = after[nil] { merged.append(contentsOf: front) }
        for element in result {
            merged.append(element)
            if let chain = after[element] { merged.append(contentsOf: chain) }
        }
        return merged
    }
}
