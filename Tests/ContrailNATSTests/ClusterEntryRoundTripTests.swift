import ContrailFuzz
@testable import ContrailServer
import ContrailTestSupport
import ContrailWire
import Foundation
import Testing

/// A cluster server applies its own published batch from the change sets it encoded, not from the
/// log: that is what every other server applies only if decoding a log entry gives back exactly the
/// change sets it was made from. Property: for change sets a session accepted (parsed from a
/// `ScopeSync` frame as the server parses one, dates made canonical as the session does), stamped
/// and batched as the committer writes them, decoding the log payload is the identity.
@Suite struct ClusterEntryRoundTripTests {
    @Test func decodingALogEntryGivesBackTheChangeSetsItWasEncodedFrom() throws {
        var random = SplitMix64(seed: 0x00C0_FFEE_2025)
        var changeSets = 0
        for _ in 0..<300 {
            let entries = try (0..<Int.random(in: 1...6, using: &random)).map { _ in try Self.acceptedEntry(&random) }
            changeSets += entries.count
            let payload = ClusterEntry.batchPayload(entries.map { ClusterEntry.stamped($0.encoded, user: "ü\"ser", time: Date()) })
            let decoded = try ClusterEntry(decoding: payload)
            #expect(decoded == (entries.count == 1 ? entries[0] : .batch(entries)))
        }
        #expect(changeSets > 600)
    }

    /// Control: the comparison sees a change set that differs in one value (the property above could
    /// not pass by comparing nothing), and a number's kind is part of the value (`1` is not `1.0`).
    @Test func theComparisonSeesADifferentValue() throws {
        let uuid = UUID()
        let entry = ClusterEntry.changeSet(fragments: [SyncFragment(kind: .change, uuid: uuid, className: "Deck",
                                                                    properties: ["x": .double(1)])], atomic: false, id: nil)
        let other = ClusterEntry.changeSet(fragments: [SyncFragment(kind: .change, uuid: uuid, className: "Deck",
                                                                    properties: ["x": .int(1)])], atomic: false, id: nil)
        #expect(try ClusterEntry(decoding: entry.encoded) == entry)
        #expect(try ClusterEntry(decoding: entry.encoded) != other)
    }

    /// The deepest change set a session parses (its frame nested to the parser's limit) decodes
    /// from a batch, two levels deeper; with the plain limit it would not (control), and every other
    /// server would skip what its writer applied.
    @Test func theDeepestChangeSetASessionAcceptsDecodesFromABatch() throws {
        // Frame (1) → fragments (2) → fragment (3) → text (4) → the key's object (5) → …
        let depth = JSONLimits().maxDepth
        var nested = JSON.object([:])
        for _ in 0..<(depth - 5) { nested = .object(["n": nested]) }
        let fragment = SyncFragment(kind: .change, uuid: UUID(), className: "Note", properties: ["body": "x"],
                                    textOperations: ["body": nested])
        let sync = ScopeSync(index: 1, scopeIndex: 0, fragments: [fragment], changeSetID: UUID())
        let accepted = try Self.parsedAsASession(sync)
        let entry = ClusterEntry.changeSet(fragments: accepted.fragments, atomic: false, id: accepted.changeSetID)
        let payload = ClusterEntry.batchPayload([entry.encoded, entry.encoded])
        #expect(try ClusterEntry(decoding: payload) == .batch([entry, entry]))
        #expect((try? JSON(parsing: payload)) == nil)  // the plain limit refuses it
        // One level deeper is what a session refuses in the first place.
        var deeper = sync
        deeper.fragments[0].textOperations = ["body": .object(["n": nested])]
        #expect(throws: JSONError.self) { try JSON(parsing: deeper.json.serialized()) }
    }

    // MARK: Generating what a session accepts

    /// A random change set, sent as a frame and parsed the way a session parses it.
    static func acceptedEntry(_ random: inout SplitMix64) throws -> ClusterEntry {
        let fragments = (0..<Int.random(in: 1...4, using: &random)).map { _ in fragment(&random) }
        let id: UUID? = Bool.random(using: &random) ? UUID() : nil
        let atomic: Bool? = [nil, true, false].randomElement(using: &random)!
        let accepted = try parsedAsASession(ScopeSync(index: 7, scopeIndex: 0, fragments: fragments, atomic: atomic, changeSetID: id))
        // As `ServerSession` hands it to the scope: dates as epoch seconds unless it has an id.
        let canonical = accepted.changeSetID == nil ? CanonicalDate.canonical(accepted.fragments) : accepted.fragments
        return .changeSet(fragments: canonical, atomic: accepted.atomic == true, id: accepted.changeSetID)
    }

    /// `sync` serialized as a frame and decoded as `ServerSession` decodes one.
    static func parsedAsASession(_ sync: ScopeSync) throws -> ScopeSync {
        let json = try JSON(parsing: sync.json.serialized(), limits: JSONLimits(maxBytes: ServerOptions().maxMessageBytes))
        guard case .success(.scopeSync(let parsed))? = try MessageFrame.decodeEach(json).first else {
            throw TestFailure("not a ScopeSync")
        }
        return parsed
    }

    static func fragment(_ random: inout SplitMix64) -> SyncFragment {
        let kind: SyncFragment.Kind = Bool.random(using: &random) ? .add : .change
        var fragment = SyncFragment(kind: kind, uuid: UUID(), className: string(&random, length: 1...8))
        for index in 0..<Int.random(in: 0...6, using: &random) {
            fragment.properties["p\(index)" + string(&random, length: 0...3)] = value(&random)
        }
        let keys = Array(fragment.properties.keys)
        if let key = keys.randomElement(using: &random), Int.random(in: 0..<4, using: &random) == 0 {
            fragment.textOperations = [key: .object(["ops": .array([.int(3), .string(string(&random, length: 0...5)), .int(-1)]),
                                                     "nested": .object(["v": value(&random), "w": .array([value(&random), .null])])])]
        }
        if let key = keys.randomElement(using: &random), Int.random(in: 0..<4, using: &random) == 0 {
            fragment.counterDeltas = [key: Int64.random(in: .min ... .max, using: &random)]
        }
        if Int.random(in: 0..<4, using: &random) == 0 {
            fragment.bases = ["items": (0..<Int.random(in: 0...4, using: &random)).map { _ in UUID() }]
        }
        if kind == .change, Int.random(in: 0..<3, using: &random) == 0 {
            let base = (0..<Int.random(in: 0...6, using: &random)).map { _ in UUID() }
            var new = base.shuffled(using: &random).dropLast(Int.random(in: 0...min(2, base.count), using: &random)).map { $0 }
            new.insert(UUID(), at: Int.random(in: 0...new.count, using: &random))
            fragment.collectionEdits = ["edited": CollectionEdit(base: base, new: new)!]
        }
        return fragment
    }

    /// A property value: every kind a fragment may carry, with the edges of numbers and strings.
    static func value(_ random: inout SplitMix64) -> JSON {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int([Int64.min, Int64.max, 0, -1, Int64.random(in: .min ... .max, using: &random)].randomElement(using: &random)!)
        case 3: return .uint(UInt64.random(in: UInt64(Int64.max) + 1 ... .max, using: &random))
        case 4: return .double(double(&random))
        case 5: return .string(string(&random, length: 0...12))
        case 6: return .string(["2024-03-05T10:00:00Z", "2024-03-05T10:00:00.123Z", "1999-12-31T23:59:59+02:00"].randomElement(using: &random)!)
        case 7: return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in Bool.random(using: &random) ? .double(double(&random)) : .null })
        case 8: return .array((0..<Int.random(in: 1...5, using: &random)).map { _ in .string(string(&random, length: 0...6)) })
        default: return .array((0..<Int.random(in: 1...5, using: &random)).map { _ in .int(Int64.random(in: -1_000...1_000, using: &random)) })
        }
    }

    static func double(_ random: inout SplitMix64) -> Double {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return [0.0, -0.0, 0.1, 1e15, 1e15 - 1, -1e15 + 1, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .infinity, -.infinity]
            .randomElement(using: &random)!
        case 1: return Double(Int.random(in: -1_000_000...1_000_000, using: &random))
        case 2: return Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 1_000
        default:
            let bits = Double(bitPattern: random.next())
            return bits.isFinite ? bits : 1.5
        }
    }

    static func string(_ random: inout SplitMix64, length: ClosedRange<Int>) -> String {
        let alphabet: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "e\u{301}",
                                  "\u{2028}", "\u{FEFF}", "😀", "👩‍👩‍👧", "中", "\u{10FFFF}"]
        return (0..<Int.random(in: length, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
    }
}
