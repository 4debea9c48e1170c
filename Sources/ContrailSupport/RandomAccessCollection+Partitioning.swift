extension RandomAccessCollection {
    /// The first index whose element satisfies `isInSecondPart`, or `endIndex`, in a collection
    /// partitioned by it (every element that does not satisfy it comes before every one that does):
    /// a binary search. For a sorted collection, `partitioningIndex { $0 >= value }` is where `value`
    /// goes to keep it sorted, and how many elements are less than it. O(log n) calls of
    /// `isInSecondPart`.
    @inlinable
    package func partitioningIndex(where isInSecondPart: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if try isInSecondPart(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
