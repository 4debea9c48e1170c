import ContrailFuzz
import ContrailWire
import Foundation
import Testing

/// contrail-text.js and Swift's `TextDocument` (Protocol §8.21) reach the same text from the same
/// operations: random concurrent edits of 2–5 replicas (made in Swift, with offline stretches), each
/// replayed in Node in the order every replica applied them, must give Swift's text exactly, and
/// the same encoded state byte for byte (`stateJSON`, version 1), which each side also decodes
/// from the other.
@Suite struct JSTextAgreementTests {
    /// One case: every operation list made, and per replica the order it applied them in.
    struct Case {
        var operations: [[TextOperation]] = []
        var orders: [[Int]] = []
        var text = ""
        /// Each replica's encoded state, keys sorted (as JavaScript writes them).
        var states: [String] = []
    }

    /// Letters, and a few characters that JSON escapes or that take more than one UTF-16 unit.
    static let alphabet: [Unicode.Scalar] = Array("abcdefghijklmnopqrstuvwxyz".unicodeScalars) + ["é", "😀", "\n", "\"", "\\"]

    static func makeCase(seed: UInt64) throws -> Case {
        var random = SplitMix64(seed: seed)
        let count = 2 + Int(seed % 4)
        let replicas = (0..<count).map { TextDocument(replica: "r\($0)") }
        var result = Case(orders: Array(repeating: [], count: count))
        var published: [Int] = []
        var seen = Array(repeating: 0, count: count)
        var outboxes = Array(repeating: [Int](), count: count)
        var online = Array(repeating: true, count: count)
        for _ in 0..<120 {
            let index = Int(random.next() % UInt64(count))
            let document = replicas[index]
            var made: [TextOperation] = []
            switch random.next() % 8 {
            case 0...3:
                let position = Int(random.next() % UInt64(document.count + 1))
                let text = String(String.UnicodeScalarView((0..<(1 + Int(random.next() % 3))).map { _ in
                    alphabet[Int(random.next() % UInt64(random.next() % 4 == 0 ? alphabet.count : 26))]
                }))
                if let operation = try document.insert(text, at: position) { made = [operation] }
            case 4...5 where document.count > 0:
                let start = Int(random.next() % UInt64(document.count))
                made = try document.delete(start..<min(document.count, start + 1 + Int(random.next() % 4)))
            case 6:
                online[index].toggle()
            default:
                break
            }
            if !made.isEmpty {
                result.operations.append(made)
                result.orders[index].append(result.operations.count - 1)
                outboxes[index].append(result.operations.count - 1)
            }
            guard online[index] else { continue }
            published += outboxes[index]
            outboxes[index] = []
            for next in published[seen[index]...] where !result.orders[index].contains(next) {
                try document.apply(result.operations[next])
                result.orders[index].append(next)
            }
            seen[index] = published.count
        }
        for index in 0..<count { published += outboxes[index] }
        for index in 0..<count {
            for next in published where !result.orders[index].contains(next) {
                try replicas[index].apply(result.operations[next])
                result.orders[index].append(next)
            }
        }
        result.text = replicas[0].text
        for replica in replicas { #expect(replica.text == result.text, "Swift replicas of seed \(seed) converge") }
        result.states = replicas.map { String(decoding: $0.stateJSON.serialized(sortedKeys: true), as: UTF8.self) }
        #expect(Set(result.states).count == 1, "Swift replicas of seed \(seed) encode the same state")
        return result
    }

    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run contrail-text.js"))
    func javaScriptAndSwiftReachTheSameTextOnRandomConcurrentOperations() async throws {
        let node = try #require(PagesNodeTests.node)
        let cases = try (0..<200).map { try Self.makeCase(seed: UInt64($0)) }
        #expect(cases.filter { $0.text.count > 20 }.count > 100, "the cases are not trivial")
        let json = JSON.array(cases.map { item in
            .object(["ops": .array(item.operations.map(TextOperation.json)),
                     "orders": .array(item.orders.map { .array($0.map { .int(Int64($0)) }) }),
                     "state": (try? JSON(parsing: item.states[0])) ?? .null])
        })
        let file = FileManager.default.temporaryDirectory.appending(path: "contrail-text-cases-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(json.serialized()).write(to: file)
        let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/text-agreement.mjs")
        let result = try await runChild(node, [script.path, file.path], timeout: .seconds(120))
        try #require(result.status == 0, "node failed:\n\(result.output.prefix(2000))")
        let javaScript = try #require(try JSON(parsing: result.output).arrayValue)
        try #require(javaScript.count == cases.count)
        var differences: [String] = []
        for (index, (item, results)) in zip(cases, javaScript).enumerated() {
            for (order, result) in (results.arrayValue ?? []).enumerated() {
                if result["text"] != .string(item.text) {
                    differences.append("seed \(index), order \(order): Swift \(item.text.debugDescription), JS \(result["text"] ?? .null)")
                }
                if result["state"] != .string(item.states[order]) {
                    differences.append("seed \(index), order \(order): Swift state \(item.states[order]), JS \(result["state"] ?? .null)")
                }
                // Swift decodes the state JavaScript wrote, to the same text and the same bytes.
                if let state = result["state"]?.stringValue, let decoded = try? TextDocument(replica: "s", state: JSON(parsing: state)),
                   decoded.text == item.text, String(decoding: decoded.stateJSON.serialized(sortedKeys: true), as: UTF8.self) == state {
                    continue
                }
                differences.append("seed \(index), order \(order): Swift does not decode JS's state to the same one")
            }
            if results.arrayValue?.count != item.orders.count { differences.append("seed \(index): JS replayed \(results)") }
        }
        #expect(differences.isEmpty, "\(differences.count) differ:\n\(differences.prefix(10).joined(separator: "\n"))")
    }
}
