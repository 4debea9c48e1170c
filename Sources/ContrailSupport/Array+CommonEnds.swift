extension Array {
    /// The lengths of the common prefix and of the common suffix (not overlapping the prefix) of
    /// `self` and `other`, elements compared by `same`: one pass over the two buffers from each end
    /// (no retain per element read). O(n) comparisons at most; O(1) for equal-length arrays that
    /// differ at both ends.
    @inlinable
    package func commonEnds(with other: [Element], by same: (Element, Element) -> Bool) -> (prefix: Int, suffix: Int) {
        withUnsafeBufferPointer { old in
            other.withUnsafeBufferPointer { new in
                let shorter = Swift.min(old.count, new.count)
                var prefix = 0
                while prefix < shorter, same(old[prefix], new[prefix]) { prefix += 1 }
                var suffix = 0
                while suffix < shorter - prefix, same(old[old.count - 1 - suffix], new[new.count - 1 - suffix]) { suffix += 1 }
                return (prefix, suffix)
            }
        }
    }
}
