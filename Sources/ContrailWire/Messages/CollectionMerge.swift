import ContrailSupport

/// The three-way merge of an ordered collection (Protocol §8.4): the edit from `base` to `new`
/// (removals, inserts, moves) applied to `current`, so concurrent edits of one collection all
/// survive. The client (to merge remote values into pending local edits) and the server (to apply a
/// `change` that carries `bases`) use this one function, so both reach the same order.
///
/// The rules, where "the edit" is base → new and "the other side" is base → current:
/// 1. **Removal wins within a collection.** An element either side removed is absent from the
///    result, unless the edit inserted it (it is in `new` but not in `base`). A move within the
///    collection by one side does not bring back an element the other side removed from it. An
///    element moved in from another collection is an insert here, so it stays even when the other
///    side removed it from the collection it left (the server brings the object back if that removal
///    deleted it).
/// 2. **Kept elements keep the other side's order.** Elements the edit left in place (the longest
///    run of common elements whose relative order the edit did not change) stay where `current` has them.
/// 3. **Inserts and moves are placed by their predecessor.** Each element the edit inserted or moved
///    goes right after its nearest predecessor in `new` that is in the result (at the front when there
///    is none), in `new` order.
/// 4. **Concurrent inserts at one spot: first applied, first.** Elements of `current` that the edit
///    does not know (the other side inserted them) and that sit at that spot are stepped over, so the
///    change applied later lands after the one applied earlier.
/// 5. No element appears twice.
///
/// ```swift
/// CollectionMerge.merge(base: [a], new: [a, b], current: [a, c])   // [a, c, b]
/// CollectionMerge.merge(base: [x], new: [x, y], current: [])       // [y]: x stays removed
/// ```
///
/// Complexity: O((b + n + c) log n) for the stable run, plus O(c) per placed element.
public enum CollectionMerge {
    /// `current` with the base → new edit applied, by the rules above.
    public static func merge<Element: Hashable>(base: [Element], new: [Element], current: [Element]) -> [Element] {
        if base == current { return new }
        if base == new { return current }
        let newSet = Set(new)
        let baseSet = Set(base)
        let currentSet = Set(current)
        // Elements kept in place: common to base and new, in the longest run whose relative order
        // did not change. The other common elements were moved and are placed again like inserts.
        let stable = stableElements(base: base, new: new, newSet: newSet)
        var placed: Set<Element> = []
        var result: [Element] = []
        result.reserveCapacity(current.count + new.count)
        for element in current {
            if baseSet.contains(element) {
                // Removed by the edit, or moved (placed below).
                guard newSet.contains(element), stable.contains(element) else { continue }
            } else if newSet.contains(element) {
                continue  // The edit inserts it too: placed below, once.
            }
            if placed.insert(element).inserted { result.append(element) }
        }
        // Place inserts and moves in `new` order, each after its nearest placed predecessor.
        var previous: Element?
        for element in new {
            defer { previous = element }
            if placed.contains(element) { continue }
            // Rule 1: an element of `base` that `current` lacks was removed by the other side.
            if baseSet.contains(element), !currentSet.contains(element) { continue }
            var position = 0
            if let anchor = predecessor(of: element, in: new, placed: placed, hint: previous),
               let anchorIndex = result.firstIndex(of: anchor) {
                position = anchorIndex + 1
            }
            // Step over elements inserted concurrently elsewhere (unknown to this edit), so a
            // later insert at the same spot lands after an earlier one.
            while position < result.count, !baseSet.contains(result[position]), !newSet.contains(result[position]) {
                position += 1
            }
            result.insert(element, at: position)
            placed.insert(element)
        }
        return result
    }

    /// The elements the edit base → new inserts or moves (in `new` order): those rule 3 places. A
    /// merge whose result lacks one of them dropped part of the edit (a concurrent removal won), so
    /// the sender settles its change set as partially reverted. O((b + n) log n).
    public static func placed<Element: Hashable>(base: [Element], new: [Element]) -> [Element] {
        if base == new { return [] }
        let stable = stableElements(base: base, new: new, newSet: Set(new))
        var seen: Set<Element> = []
        return new.filter { !stable.contains($0) && seen.insert($0).inserted }
    }

    /// The nearest element before `element` in `new` that is already placed.
    private static func predecessor<Element: Hashable>(of element: Element, in new: [Element], placed: Set<Element>, hint: Element?) -> Element? {
        if let hint, placed.contains(hint) { return hint }
        guard let index = new.firstIndex(of: element) else { return nil }
        var cursor = index - 1
        while cursor >= 0 {
            if placed.contains(new[cursor]) { return new[cursor] }
            cursor -= 1
        }
        return nil
    }

    /// The common elements of base and new that form a longest subsequence in the same relative
    /// order in both (longest increasing subsequence of base positions, O(n log n)).
    private static func stableElements<Element: Hashable>(base: [Element], new: [Element], newSet: Set<Element>) -> Set<Element> {
        var basePosition: [Element: Int] = [:]
        basePosition.reserveCapacity(base.count)
        for (position, element) in base.enumerated() where newSet.contains(element) && basePosition[element] == nil {
            basePosition[element] = position
        }
        let sequence = new.compactMap { element in basePosition[element].map { (element, $0) } }
        guard !sequence.isEmpty else { return [] }
        var tails: [Int] = []            // index into `sequence` of the smallest tail for each length
        var parents = Array(repeating: -1, count: sequence.count)
        for (index, item) in sequence.enumerated() {
            let low = tails.partitioningIndex { sequence[$0].1 >= item.1 }
            if low > 0 { parents[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var stable: Set<Element> = []
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            stable.insert(sequence[cursor].0)
            cursor = parents[cursor]
        }
        return stable
    }
}
