import ContrailFuzz
import ContrailWire
import Foundation
import Testing

/// The JavaScript client's collection edits (`collectionEdit` in contrail-collections.js) and Swift's
/// `CollectionEdit` are the same wire objects (digest, removals, placements and anchors) on the same
/// 5,000 seeded random cases, duplicates included (no edit on either side).
@Suite struct JSCollectionEditAgreementTests {
    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run contrail-collections.js"))
    func javaScriptAndSwiftWriteTheSameEdits() async throws {
        let node = try #require(PagesNodeTests.node)
        var random = SplitMix64(seed: 2431)
        let pool = (0..<10).map { _ in UUID() }
        let cases: [(base: [UUID], new: [UUID])] = (0..<5_000).map { index in
            let base = Array(pool.shuffled(using: &random).prefix(Int.random(in: 0...8, using: &random)))
            var new = base.filter { _ in Int.random(in: 0..<4, using: &random) != 0 }
            for element in pool where !base.contains(element) && Int.random(in: 0..<4, using: &random) == 0 {
                new.insert(element, at: Int.random(in: 0...new.count, using: &random))
            }
            if new.count > 1, Bool.random(using: &random) { new.swapAt(0, new.count - 1) }
            if index % 16 == 0, let first = new.first { new.append(first) }  // an element twice: no edit
            return (base, new)
        }
        let swift = cases.map { CollectionEdit(base: $0.base, new: $0.new)?.json ?? .null }
        #expect(swift.filter { $0 == .null }.count >= 300, "cases without an edit are there")
        #expect(swift.filter { $0["place"] != nil && $0["remove"] != nil }.count > 1_000, "most edits place and remove")

        let file = FileManager.default.temporaryDirectory.appending(path: "contrail-edit-cases-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let json = JSON.array(cases.map { .array([$0.base, $0.new].map { .array($0.map { .string($0.wireString) }) }) })
        try Data(json.serialized(sortedKeys: true)).write(to: file)
        let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/collection-edit-agreement.mjs")
        let result = try await runChild(node, [script.path, file.path], timeout: .seconds(120))
        try #require(result.status == 0, "node failed:\n\(result.output.prefix(2000))")
        let javaScript = try #require(try JSON(parsing: result.output).arrayValue, "not a JSON array: \(result.output.prefix(200))")
        try #require(javaScript.count == cases.count)
        var differences: [String] = []
        for (index, (ours, theirs)) in zip(swift, javaScript).enumerated() where ours != theirs {
            differences.append("case \(index): Swift \(ours.jsonString), JS \(theirs.jsonString)")
        }
        #expect(differences.isEmpty, "\(differences.count) of \(cases.count) differ:\n\(differences.prefix(10).joined(separator: "\n"))")
    }
}
