@testable import ContrailServer
import Testing

struct RecentIDsTests {
    @Test func keepsTheLastIDsAndForgetsTheOldest() {
        var recent = RecentIDs(limit: 3)
        for id in ["a", "b", "c"] { recent.insert(id) }
        #expect(["a", "b", "c"].allSatisfy(recent.contains))
        recent.insert("b")  // already there: nothing leaves
        #expect(recent.contains("a"))
        recent.insert("d")
        #expect(!recent.contains("a"), "the oldest left")
        #expect(["b", "c", "d"].allSatisfy(recent.contains))
        for id in ["e", "f", "g"] { recent.insert(id) }
        #expect(!["b", "c", "d"].contains(where: recent.contains))
        #expect(["e", "f", "g"].allSatisfy(recent.contains))
    }
}
