import ContrailFuzz
import ContrailWire
import Foundation
import Testing

/// The JavaScript client's collection merge (`mergeCollection` in contrail.js) and Swift's
/// `CollectionMerge` give the same result on the same 10,000 seeded random cases: edits of a common
/// base (removals, inserts, moves) and arbitrary lists, duplicates included.
@Suite struct JSMergeAgreementTests {
    /// One case: base, new, current.
    typealias Case = (base: [String], new: [String], current: [String])

    /// `count` cases from `seed`: half edits of a random base on both sides, half independent lists.
    static func cases(seed: UInt64, count: Int) -> [Case] {
        var random = SplitMix64(seed: seed)
        let pool = (0..<9).map { "e\($0)" }
        func list(duplicates: Bool) -> [String] {
            let length = Int.random(in: 0...7, using: &random)
            if duplicates { return (0..<length).map { _ in pool.randomElement(using: &random)! } }
            return Array(pool.shuffled(using: &random).prefix(length))
        }
        func edit(_ list: [String]) -> [String] {
            var result = list.filter { _ in Int.random(in: 0..<4, using: &random) != 0 }
            for element in pool where !list.contains(element) && Int.random(in: 0..<4, using: &random) == 0 {
                result.insert(element, at: Int.random(in: 0...result.count, using: &random))
            }
            for _ in 0..<Int.random(in: 0...2, using: &random) where result.count > 1 {
                let moved = result.remove(at: Int.random(in: 0..<result.count, using: &random))
                result.insert(moved, at: Int.random(in: 0...result.count, using: &random))
            }
            return result
        }
        return (0..<count).map { index in
            if index % 2 == 0 {
                let base = list(duplicates: false)
                return (base, edit(base), edit(base))
            }
            let duplicates = index % 8 == 1
            return (list(duplicates: duplicates), list(duplicates: duplicates), list(duplicates: duplicates))
        }
    }

    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run contrail.js's merge"))
    func javaScriptAndSwiftMergeAgreeOnTenThousandRandomCases() async throws {
        let node = try #require(PagesNodeTests.node)
        let cases = Self.cases(seed: 31, count: 10_000)
        let swift = cases.map { CollectionMerge.merge(base: $0.base, new: $0.new, current: $0.current) }
        // The cases are not trivial: many merges differ from both sides' lists.
        #expect(zip(cases, swift).filter { $0.0.new != $0.1 && $0.0.current != $0.1 }.count > 2_000)

        let file = FileManager.default.temporaryDirectory.appending(path: "contrail-merge-cases-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let json = JSON.array(cases.map { .array([$0.base, $0.new, $0.current].map { .array($0.map(JSON.string)) }) })
        try Data(json.serialized(sortedKeys: true)).write(to: file)
        let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/merge-agreement.mjs")
        let result = try await runChild(node, [script.path, file.path], timeout: .seconds(120))
        try #require(result.status == 0, "node failed:\n\(result.output.prefix(2000))")
        let javaScript = try #require(try JSON(parsing: result.output).arrayValue, "not a JSON array: \(result.output.prefix(200))")
        try #require(javaScript.count == cases.count)
        var differences: [String] = []
        for (index, (merged, theirs)) in zip(swift, javaScript).enumerated() where JSON.array(merged.map(JSON.string)) != theirs {
            let c = cases[index]
            differences.append("case \(index): base \(c.base) new \(c.new) current \(c.current): Swift \(merged), JS \(theirs)")
        }
        #expect(differences.isEmpty, "\(differences.count) of \(cases.count) differ:\n\(differences.prefix(10).joined(separator: "\n"))")
    }
}
