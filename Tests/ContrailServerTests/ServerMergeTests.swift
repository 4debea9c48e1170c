import Contrail
@testable import ContrailServer
import Foundation
import Testing

@Suite("Server collection merge")
struct ServerMergeTests {
    let a = UUID(), b = UUID(), c = UUID(), d = UUID(), e = UUID()

    @Test func concurrentInsertsBothSurvive() {
        // Base [a]; the server already has [a, b]; this edit appends c.
        #expect(CollectionMerge.merge(base: [a], new: [a, c], current: [a, b]) == [a, b, c])
        // Insert at the front while someone appended.
        #expect(CollectionMerge.merge(base: [a], new: [c, a], current: [a, b]) == [c, a, b])
    }

    @Test func removalsApplyToTheCurrentValue() {
        #expect(CollectionMerge.merge(base: [a, b, c], new: [a, c], current: [a, b, c, d]) == [a, c, d])
        // Removing something another client removed already is harmless.
        #expect(CollectionMerge.merge(base: [a, b], new: [a], current: [a]) == [a])
    }

    @Test func movesAreReplayed() {
        // Move c to the front while d was appended concurrently.
        #expect(CollectionMerge.merge(base: [a, b, c], new: [c, a, b], current: [a, b, c, d]) == [c, a, b, d])
    }

    @Test func noDuplicatesWhenBothInsertTheSameElement() {
        #expect(CollectionMerge.merge(base: [a], new: [a, e], current: [a, e]) == [a, e])
    }

    @Test func trivialCasesShortCut() {
        #expect(CollectionMerge.merge(base: [a, b], new: [b], current: [a, b]) == [b])
        #expect(CollectionMerge.merge(base: [a], new: [a], current: [a, b]) == [a, b])
    }
}
