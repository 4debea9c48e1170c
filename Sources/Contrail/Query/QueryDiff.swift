import ContrailSupport
import Foundation

/// How a live query turns the objects that left, joined and changed into index-based changes.
enum QueryDiff {
    /// Which of `candidates` moved. Each candidate is an object present before and after whose
    /// place relative to the others may have changed, with its old and new index. Every object not
    /// listed in `oldUnstable` (sorted old indices of the objects that left, and of the candidates)
    /// or `newUnstable` (sorted new indices of the objects that joined, and of the candidates) is
    /// stable: it kept its order relative to every other stable object. A candidate stays (is not
    /// a move) when it has as many stable objects before it after as before, and, among the
    /// candidates between the same two stable objects, it belongs to a longest run whose old and
    /// new orders agree. O(k log k) for k candidates and unstable indices.
    static func moved(_ candidates: [(old: Int, new: Int)], oldUnstable: [Int], newUnstable: [Int]) -> [Bool] {
        var result = Array(repeating: true, count: candidates.count)
        var gaps: [Int: [Int]] = [:]
        for (index, candidate) in candidates.enumerated() {
            let before = candidate.old - countLess(than: candidate.old, in: oldUnstable)
            let after = candidate.new - countLess(than: candidate.new, in: newUnstable)
            if before == after { gaps[before, default: []].append(index) }
        }
        for members in gaps.values {
            let byNew = members.sorted { candidates[$0].new < candidates[$1].new }
            for kept in longestIncreasingRun(byNew.map { candidates[$0].old }) { result[byNew[kept]] = false }
        }
        return result
    }

    /// How many of `sorted` are less than `value`. O(log n).
    static func countLess(than value: Int, in sorted: [Int]) -> Int {
        sorted.partitioningIndex { $0 >= value }
    }

    /// The positions of a longest strictly increasing subsequence of `values`. O(n log n).
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        guard values.count > 1 else { return Array(values.indices) }
        var tails: [Int] = []          // positions: tails[k] ends the best run of length k + 1
        var previous = Array(repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            let low = tails.partitioningIndex { values[$0] >= value }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run: [Int] = []
        var position = tails.last ?? -1
        while position >= 0 {
            run.append(position)
            position = previous[position]
        }
        return run.reversed()
    }

    /// The changes that turn `old` into `new`, two lists of distinct objects. Objects in both that
    /// are not in `relocated` kept their order relative to each other (their sort keys did not
    /// change); those in `changed` and in place are updates. O(old + new).
    static func changes<Model: AnyObject>(from old: [Model], to new: [Model], relocated: Set<ObjectIdentifier>,
                                          changed: Set<ObjectIdentifier>) -> QueryChanges {
        var newIndex: [ObjectIdentifier: Int] = [:]
        newIndex.reserveCapacity(new.count)
        for (index, object) in new.enumerated() { newIndex[ObjectIdentifier(object)] = index }
        var result = QueryChanges(oldCount: old.count, newCount: new.count)
        var oldUnstable: [Int] = []
        var newUnstable: [Int] = []
        var candidates: [(old: Int, new: Int)] = []
        var kept = Set<ObjectIdentifier>(minimumCapacity: old.count)
        for (index, object) in old.enumerated() {
            let id = ObjectIdentifier(object)
            guard let to = newIndex[id] else {
                result.removed.insert(index)
                oldUnstable.append(index)
                continue
            }
            kept.insert(id)
            if relocated.contains(id) {
                candidates.append((index, to))
                oldUnstable.append(index)
            } else if changed.contains(id) {
                result.updated.insert(index)
            }
        }
        for (index, object) in new.enumerated() where !kept.contains(ObjectIdentifier(object)) {
            result.inserted.insert(index)
            newUnstable.append(index)
        }
        newUnstable.append(contentsOf: candidates.map(\.new))
        newUnstable.sort()
        resolve(candidates, oldUnstable: oldUnstable, newUnstable: newUnstable, into: &result)
        return result
    }

    /// Adds each candidate to `result` as a move or, when it stays in place, an update.
    static func resolve(_ candidates: [(old: Int, new: Int)], oldUnstable: [Int], newUnstable: [Int],
                        into result: inout QueryChanges) {
        guard !candidates.isEmpty else { return }
        for (candidate, moved) in zip(candidates, moved(candidates, oldUnstable: oldUnstable, newUnstable: newUnstable)) {
            if moved {
                result.moved.append(QueryMove(from: candidate.old, to: candidate.new))
            } else {
                result.updated.insert(candidate.old)
            }
        }
        result.moved.sort { $0.from < $1.from }
    }
}
