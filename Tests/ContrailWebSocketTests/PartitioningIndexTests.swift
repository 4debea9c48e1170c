import ContrailSupport
import Testing

/// `partitioningIndex(where:)`, the one binary search the modules share.
@Suite struct PartitioningIndexTests {
    /// On random sorted arrays (duplicates, empty, one element) and random values, it is the first
    /// index whose element is not less than the value: the linear scan's answer.
    @Test func findsWhereTheSecondPartStartsAsALinearScanDoes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let sorted = (0..<Int.random(in: 0...20, using: &generator)).map { _ in Int.random(in: 0...10, using: &generator) }.sorted()
            let value = Int.random(in: -1...11, using: &generator)
            let expected = sorted.firstIndex { $0 >= value } ?? sorted.endIndex
            #expect(sorted.partitioningIndex { $0 >= value } == expected, "\(sorted), \(value)")
        }
    }

    /// On a slice it answers an index of the slice (not an offset), and calls the predicate
    /// O(log n) times: at most 11 for 1,000 elements (a scan would call it up to 1,000 times).
    @Test func answersASlicesIndexInLogarithmicCalls() {
        let numbers = Array(0..<2_000)
        let slice = numbers[500..<1_500]
        var calls = 0
        let index = slice.partitioningIndex { calls += 1; return $0 >= 1_234 }
        #expect(index == 1_234)
        #expect(calls <= 11, "\(calls) calls")
        #expect(slice.partitioningIndex { $0 >= 0 } == 500)
        #expect(slice.partitioningIndex { $0 >= 5_000 } == 1_500)
    }
}
