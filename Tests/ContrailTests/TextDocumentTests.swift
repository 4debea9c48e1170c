import Contrail
import Foundation
import Testing

/// The sequence CRDT of `SharedText` (Protocol §8.21) on its own: merges, interleaving, cursors,
/// encodings, hostile input, and property-based convergence of 2–5 replicas.
@Suite struct TextDocumentTests {
    @Test func localEditsAndTheirOperationsReachAnotherReplica() throws {
        let a = TextDocument(replica: "a")
        let b = TextDocument(replica: "b")
        var operations: [TextOperation] = []
        for (offset, character) in "hello".enumerated() {
            TextOperation.append(try #require(try a.insert(String(character), at: offset)), to: &operations)
        }
        #expect(operations.count == 1, "typing forward is one operation")
        #expect(try b.apply(operations) == [.insert(position: 0, text: "hello")])
        let deletion = try b.delete(1..<3)
        #expect(try a.apply(deletion) == [.delete(position: 1, count: 2)])
        #expect(a.text == "hlo" && b.text == "hlo")
        #expect(try a.apply(deletion).isEmpty, "applying twice changes nothing")
        #expect(try a.apply(operations).isEmpty)
        let small = a.memoryFootprint
        try a.insert(String(repeating: "x", count: 1_000), at: 1)
        // 1,000 scalars of 4 bytes, less the spare capacity `small` already counted (an array's
        // capacity is what the allocator handed out, which varies with the heap's state).
        #expect(a.memoryFootprint >= small + 3_800, "every character costs its scalar")
    }

    @Test func concurrentRunsAtOneSpotDoNotInterleave() throws {
        let base = TextDocument(replica: "base")
        let start = try #require(try base.insert("[]", at: 0))
        let a = TextDocument(replica: "a")
        let b = TextDocument(replica: "b")
        try a.apply(start)
        try b.apply(start)
        var fromA: [TextOperation] = []
        var fromB: [TextOperation] = []
        for (offset, character) in "alpha".enumerated() { fromA.append(try #require(try a.insert(String(character), at: 1 + offset))) }
        for (offset, character) in "bravo".enumerated() { fromB.append(try #require(try b.insert(String(character), at: 1 + offset))) }
        // Typed backwards too: each character in front of the previous one.
        for character in "zyx" { fromA.append(try #require(try a.insert(String(character), at: 1))) }
        for character in "wvu" { fromB.append(try #require(try b.insert(String(character), at: 1))) }
        try a.apply(fromB)
        try b.apply(fromA)
        #expect(a.text == b.text)
        #expect(a.text == "[xyzalphauvwbravo]" || a.text == "[uvwbravoxyzalpha]", "got \(a.text)")
    }

    /// A deletion taken back (`undelete`, for a refused one) brings the characters back under
    /// their own ids: the document is then the one a replica that never saw the deletion holds,
    /// byte for byte, and later edits from either side merge. Control: before it, they differ.
    @Test func anUndeletedRunIsTheTextThatWasNeverDeleted() throws {
        let a = TextDocument(replica: "a")
        let b = TextDocument(replica: "b")
        try b.apply(try #require(try a.insert("hello", at: 0)))
        try b.apply(try #require(try a.insert("XY", at: 2)))  // "heXYllo": "hello" in two runs
        let removed = a.text(in: 1..<5)
        let deletions = try a.delete(1..<5)
        #expect(a.text == "hlo" && a.stateJSON != b.stateJSON)
        for case .delete(let id, let count) in deletions.reversed() {
            let offset = deletions.prefix { $0 != .delete(id: id, count: count) }.reduce(0) { total, operation in
                guard case .delete(_, let count) = operation else { return total }
                return total + count
            }
            let text = String(String.UnicodeScalarView(Array(removed.unicodeScalars)[offset..<(offset + count)]))
            #expect(try !a.undelete(id, text: text).isEmpty)
        }
        #expect(a.text == "heXYllo" && a.stateJSON == b.stateJSON)
        #expect(try a.undelete(TextID(replica: "a", seq: 0), text: "h").isEmpty, "visible characters stay as they are")
        #expect(throws: TextError.self) { try a.undelete(TextID(replica: "a", seq: 6), text: "??") }
        try b.apply(try #require(try a.insert("!", at: 3)))
        #expect(b.text == "heX!Yllo")
    }

    @Test func cursorsFollowTheirCharacter() throws {
        let a = TextDocument(replica: "a")
        let b = TextDocument(replica: "b")
        try b.apply(try #require(try a.insert("world", at: 0)))
        let cursor = try a.cursor(at: 2)  // before "r"
        try a.apply(try #require(try b.insert("hello ", at: 0)))
        #expect(a.position(of: cursor) == 8)
        try a.apply(try b.delete(7..<9))  // "o" and "r" go
        #expect(a.position(of: cursor) == 7, "a deleted character's cursor stays where it was")
        #expect(a.position(of: TextCursor(before: nil)) == a.count)
        #expect(try TextCursor(json: cursor.json) == cursor)
        #expect(a.position(of: TextCursor(before: TextID(replica: "c", seq: 0))) == nil)
    }

    @Test func statesRoundTripAndMergeBothWays() throws {
        let a = TextDocument(replica: "a")
        let b = TextDocument(replica: "b")
        try b.apply(try #require(try a.insert("shared base", at: 0)))
        try a.insert("A", at: 0)
        try a.delete(3..<6)
        try b.insert("B", at: 11)
        try b.delete(0..<2)
        let copy = try TextDocument(replica: "c", state: a.stateJSON)
        #expect(copy.text == a.text)
        try a.merge(state: b.stateJSON)
        try b.merge(state: copy.stateJSON)
        #expect(a.text == b.text)
        #expect(try a.merge(state: b.stateJSON).isEmpty, "merging what it holds changes nothing")
        let decoded = try TextOperation.decode(TextOperation.json(try b.delete(0..<1)))
        #expect(try a.apply(decoded) == [.delete(position: 0, count: 1)])
        #expect(a.text == b.text)
    }

    @Test func hostileInputIsATypedErrorNeverACrash() throws {
        let a = TextDocument(replica: "a")
        try a.insert("abc", at: 0)
        #expect(throws: TextError.self) { try a.insert("x", at: 9) }
        #expect(throws: TextError.self) { try a.delete(2..<5) }
        let unknown = TextOperation.insert(id: TextID(replica: "b", seq: 0), text: "x", left: TextID(replica: "q", seq: 3), right: nil)
        #expect(throws: TextError.self) { try a.apply(unknown) }
        #expect(throws: TextError.self) { try a.apply(.insert(id: TextID(replica: "b", seq: 5), text: "x", left: nil, right: nil)) }
        #expect(throws: TextError.self) { try a.apply(.delete(id: TextID(replica: "a", seq: 2), count: 9)) }
        #expect(a.text == "abc", "nothing changed")
        let bad: [JSON] = [
            .null, ["replicas": ["a"], "ops": [[0, 0]]], ["replicas": ["a b"], "ops": []], ["replicas": ["a", "a"], "ops": []],
            ["replicas": ["a"], "ops": [[0, -1, "x", -1, 0, -1, 0]]], ["replicas": ["a"], "ops": [[3, 0, 2]]],
        ]
        for json in bad { #expect(throws: TextError.self) { try TextOperation.decode(json) } }
        // Version 1 states: header byte, length, fields (see `TextDocument.stateJSON`).
        func state(_ bytes: [UInt8], _ text: String, replicas: [JSON] = ["a"]) -> JSON {
            ["replicas": .array(replicas), "runs": .string(Data(bytes).base64EncodedString()), "text": .string(text)]
        }
        let badStates: [JSON] = [
            ["replicas": ["a"], "runs": "!!!!", "text": "x"],  // not base64
            ["replicas": ["a"], "runs": [[0, 0, "x", -1, 0, -1, 0]]],  // the array form of before version 1
            state([2, 1, 4, 1, 0, 0], "x"),  // an unknown version
            state([1, 1, 4], "x"),  // ends too early
            state([1, 1, 4, 1, 0, 1], "x"),  // a gap before seq 1
            state([1, 2, 4, 1, 0, 0, 4 | 2 << 3, 1, 0, 0], "xy"),  // twice
            state([1, 1, 5, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0], ""),  // too many characters
            state([1, 1, 4 | 3 << 3, 1, 0, 0, 0, 7], "x"),  // an origin it lacks
            state([1, 1, 4, 1, 0, 0], "xy"),  // more text than visible runs
            state([1, 1, 4, 1, 0, 0, 9], "x"),  // bytes after the runs
            state([1, 1, 4, 1, 3, 0], "x"),  // a replica index past the table
            state([1, 1, 4 | 1 << 5, 1, 0, 0], "x"),  // the last run takes the next run's right origin
            state([1, 0xFF, 0xFF, 0x7F], ""),  // a run count the bytes cannot hold
            state([1, 1, 0x80 | 4, 1, 0, 0], "x"),  // an unknown header bit
        ]
        for json in badStates { #expect(throws: TextError.self) { try TextDocument(replica: "z", state: json) } }
        // Positive control: the same shape, well formed.
        #expect(try TextDocument(replica: "z", state: state([1, 1, 4, 1, 0, 0], "x")).text == "x")
        #expect(try TextDocument(replica: "z", state: state([1, 2, 4, 1, 0, 0, 4 | 2 << 3, 1, 0, 1], "xy")).text == "xy")
    }

    /// Random bytes and mutations of real states never crash the decoder: each is a `TextError` or
    /// a document whose own encoding decodes to the same text.
    @Test func garbageStatesAreATypedErrorNeverACrash() throws {
        var random = SeededGenerator(seed: 27)
        let source = TextDocument(replica: "a")
        let other = TextDocument(replica: "b")
        try source.insert("hello brave new world", at: 0)
        try other.merge(state: source.stateJSON)
        try other.insert("XY", at: 6)
        try source.delete(2..<9)
        try source.merge(state: other.stateJSON)
        let runs = try #require(source.stateJSON["runs"]?.stringValue)
        let valid = try #require(Data(base64Encoded: runs))
        var decoded = 0
        var refused = 0
        for round in 0..<3_000 {
            var bytes = Array(valid)
            if round % 3 == 0 {
                bytes = (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                if round % 2 == 0, !bytes.isEmpty { bytes[0] = 1 }
            } else {
                for _ in 0..<(1 + Int(random.next() % 3)) where !bytes.isEmpty {
                    let index = Int(random.next() % UInt64(bytes.count))
                    switch random.next() % 3 {
                    case 0: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                    case 1: bytes.removeSubrange(index...)
                    default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                    }
                }
            }
            let text = round % 5 == 0 ? "" : String(source.text.prefix(Int(random.next() % 30)))
            let json: JSON = ["replicas": ["a", "b"], "runs": .string(Data(bytes).base64EncodedString()), "text": .string(text)]
            do {
                let document = try TextDocument(replica: "z", state: json)
                #expect(try TextDocument(replica: "y", state: document.stateJSON).text == document.text)
                decoded += 1
            } catch {
                refused += 1
            }
        }
        #expect(refused > 2_000, "most garbage is refused")
        #expect(try TextDocument(replica: "z", state: source.stateJSON).text == source.text, "positive control")
        _ = decoded
    }

    /// Deleted runs cost a run header in memory, whatever their length: their text goes, and where a
    /// replica's characters are is kept per run.
    @Test func deletedRunsCostARunHeaderInMemory() throws {
        let document = TextDocument(replica: "a")
        try document.insert(String(repeating: "abcdefghij", count: 10_000), at: 0)
        let full = document.memoryFootprint
        #expect(full >= 400_000, "positive control: 100,000 visible characters cost their scalars (\(full) bytes)")
        for start in stride(from: 90_000, through: 0, by: -10_000) { try document.delete(start..<(start + 9_990)) }
        #expect(document.count == 100)
        #expect(document.memoryFootprint < 8_000, "100 visible characters and 20 runs: \(document.memoryFootprint) bytes")
        #expect(document.text == String(repeating: "abcdefghij", count: 10))
        // The same from a state: a deleted run of 2^24 - 1 characters in a few bytes costs no more.
        let huge: JSON = ["replicas": ["a"], "runs": .string(Data([1, 1, 5, 0xFF, 0xFF, 0xFF, 0x07, 0, 0]).base64EncodedString()), "text": ""]
        let decoded = try TextDocument(replica: "z", state: huge)
        #expect(decoded.count == 0 && decoded.memoryFootprint < 8_000, "\(decoded.memoryFootprint) bytes")
        try decoded.insert("x", at: 0)
        #expect(try TextDocument(replica: "y", state: decoded.stateJSON).text == "x")
    }

    /// Deleted runs cost a few bytes each in the encoded state, whatever their length.
    @Test func deletedRunsCostAFewBytesInTheState() throws {
        let document = TextDocument(replica: "a")
        try document.insert(String(repeating: "abcdefghij", count: 1_000), at: 0)
        for start in stride(from: 9_000, through: 0, by: -1_000) { try document.delete(start..<(start + 990)) }
        #expect(document.count == 100)
        let state = document.stateJSON.serialized().count
        #expect(state < 100 + 20 * 4 + 80, "10 live and 10 deleted runs: \(state) bytes")
        let copy = try TextDocument(replica: "b", state: document.stateJSON)
        #expect(copy.text == document.text)
        #expect(copy.stateJSON == document.stateJSON, "the encoding is deterministic")
    }

    /// Replicas edit at random, going offline (their operations wait in an outbox) and online (the
    /// outbox joins the server's log, in order) and restarting (the document is rebuilt from its
    /// encoded state under a new replica name); they all end with the text of the whole log.
    @Test(arguments: 0..<40)
    func randomReplicasConverge(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let count = 2 + Int(seed % 4)
        var replicas = (0..<count).map { TextDocument(replica: "r\($0)") }
        var cursors = Array(repeating: 0, count: count)
        var outboxes = Array(repeating: [TextOperation](), count: count)
        var online = Array(repeating: true, count: count)
        var log: [TextOperation] = []
        var restarts = 0
        for _ in 0..<300 {
            let index = Int(random.next() % UInt64(count))
            let document = replicas[index]
            switch random.next() % 10 {
            case 0...4:
                let position = Int(random.next() % UInt64(document.count + 1))
                let text = String((0..<(1 + Int(random.next() % 4))).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 26))) })
                outboxes[index].append(try #require(try document.insert(text, at: position)))
            case 5...6 where document.count > 0:
                let start = Int(random.next() % UInt64(document.count))
                let end = min(document.count, start + 1 + Int(random.next() % 5))
                outboxes[index] += try document.delete(start..<end)
            case 7:
                online[index].toggle()
            case 8:
                let state = document.stateJSON
                replicas[index] = try TextDocument(replica: "r\(index)x\(restarts)", state: state)
                restarts += 1
            default:
                break
            }
            if online[index] {
                log += outboxes[index]
                outboxes[index] = []
                try replicas[index].apply(Array(log[cursors[index]...]))
                cursors[index] = log.count
            }
        }
        for index in 0..<count {
            log += outboxes[index]
            outboxes[index] = []
        }
        let reference = TextDocument(replica: "reference")
        try reference.apply(log)
        for index in 0..<count {
            try replicas[index].apply(Array(log[cursors[index]...]))
            #expect(replicas[index].text == reference.text, "replica \(index) of seed \(seed)")
        }
        let merged = TextDocument(replica: "merged")
        for replica in replicas { try merged.merge(state: replica.stateJSON) }
        #expect(merged.text == reference.text, "merging every state gives the same text")
    }
}
