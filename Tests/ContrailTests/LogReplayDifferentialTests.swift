@testable import Contrail
@testable import ContrailWire
import ContrailTestSupport
import Foundation
import Testing

/// `LogReplay` (the one-pass restore of a log record) against the general path (decode the record
/// into ``FragmentLogEntry`` and its fragments, then `Scope.apply`), over random logs: every seed
/// makes random change sets on a model tree holding every kind of value (optionals and nil,
/// references, collections, removals, moves, objects that come back), writes them with the real
/// log writer, and restores the file both ways. The two restored states, and the state the log was
/// written from, must be equal. The same records are then rewritten in text the fast path must read
/// through its general branches or hand to the general reader (other key orders, whitespace,
/// escapes), and must restore to the same state again. A failure names its seed.
@MainActor
@Suite struct LogReplayDifferentialTests {
    /// Change sets per log.
    static let changeSets = 25

    @Test(arguments: 0..<32)
    func fastAndGeneralRestoresAgree(seed: Int) throws {
        ModelRegistry.register(DifferentialBoard.self, DifferentialItem.self)
        var random = SeededGenerator(seed: UInt64(seed))
        let url = Self.temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let written = try Self.writeRandomLog(at: url, random: &random)

        let general = try Self.restoreThroughApply(url)
        let (fast, records) = try Self.restoreThroughLog(url)
        #expect(records == (try Self.records(at: url)).count, "seed \(seed)")
        let lost = Self.differences(general.stateJSON(), written)
        #expect(lost.isEmpty, "seed \(seed): Scope.apply restores another state than the one written:\n\(lost)")
        let disagreement = Self.differences(fast.stateJSON(), general.stateJSON())
        #expect(disagreement.isEmpty, "seed \(seed): LogReplay and Scope.apply disagree:\n\(disagreement)")

        let variants: [(String, TextVariant)] = [
            ("whitespace", TextVariant(shufflesKeys: false, addsWhitespace: true, escapes: false)),
            ("escapes", TextVariant(shufflesKeys: false, addsWhitespace: false, escapes: true)),
            ("key order", TextVariant(shufflesKeys: true, addsWhitespace: false, escapes: false)),
            ("all three", TextVariant(shufflesKeys: true, addsWhitespace: true, escapes: true)),
        ]
        for (name, variant) in variants {
            let variantURL = Self.temporaryURL()
            defer { try? FileManager.default.removeItem(at: variantURL) }
            var text = variant
            try Self.rewrite(url, to: variantURL) { text.write($0, random: &random) }
            let (restored, _) = try Self.restoreThroughLog(variantURL)
            let difference = Self.differences(restored.stateJSON(), general.stateJSON())
            #expect(difference.isEmpty, "seed \(seed), \(name): the rewritten log restores another state:\n\(difference)")
        }
    }

    @Test func theFastPathTakesTheUsualLayoutAndHandsOnTheOthers() throws {
        ModelRegistry.register(DifferentialBoard.self, DifferentialItem.self)
        var random = SeededGenerator(seed: 7)
        let url = Self.temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try Self.writeRandomLog(at: url, random: &random)
        let records = try Self.records(at: url)
        let snapshot = try #require(records.first)
        #expect(snapshot.kind == .snapshot)
        let json = try JSON(parsing: snapshot.payload)
        var plain = TextVariant(shufflesKeys: false, addsWhitespace: false, escapes: false)
        var spaced = TextVariant(shufflesKeys: false, addsWhitespace: true, escapes: true)
        // Positive control: the bytes as written, and the same layout with whitespace and escapes,
        // are read by the fast path itself.
        #expect(try Self.fastPathAccepts(snapshot.payload))
        #expect(try Self.fastPathAccepts(plain.write(json, random: &random)))
        #expect(try Self.fastPathAccepts(spaced.write(json, random: &random)))
        // The root after the fragments (an older layout), or a pending change set's sequence number:
        // left to the general reader.
        var rootLast = TextVariant(shufflesKeys: false, addsWhitespace: false, escapes: false, keyOrder: ["fragments", "root"]
                                   + TextVariant.logOrder)
        #expect(try !Self.fastPathAccepts(rootLast.write(json, random: &random)))
        guard case .object(var members) = json else { throw TestFailure("the snapshot is not an object") }
        members["seq"] = .int(3)
        var sequenceLast = TextVariant(shufflesKeys: false, addsWhitespace: false, escapes: false,
                                       keyOrder: TextVariant.logOrder + ["seq"])
        #expect(try !Self.fastPathAccepts(sequenceLast.write(.object(members), random: &random)))
    }

    /// NaN goes out as `null`, so a `[Double]` holding NaN is logged as `[1.5,null]`: a null hole
    /// among numbers, which the fragment rules accept (Protocol §3), and both paths read it back as
    /// NaN in place. Likewise a nil element of `[Int?]`.
    @Test func holesInArraysRestoreThroughTheLogAndThroughApply() throws {
        ModelRegistry.register(DifferentialBoard.self, DifferentialItem.self)
        func logHolding(_ numbers: [Double], _ slots: [Int?]) throws -> URL {
            let url = Self.temporaryURL()
            let scope = Scope(name: "Differential")
            let board = DifferentialBoard()
            scope.root = board
            let log = FragmentLog(url: url, fsync: .never)
            try log.attach(to: scope)
            scope.modify {
                board.numbers = numbers
                board.slots = slots
            }
            try log.close()
            return url
        }
        func restoredBoth(_ url: URL) throws -> [DifferentialBoard] {
            [try #require(try Self.restoreThroughLog(url).0.root as? DifferentialBoard),
             try #require(try Self.restoreThroughApply(url).root as? DifferentialBoard)]
        }
        // Positive control: the same arrays without holes.
        let good = try logHolding([1.5, 2], [1, 2])
        defer { try? FileManager.default.removeItem(at: good) }
        for board in try restoredBoth(good) {
            #expect(board.numbers == [1.5, 2])
            #expect(board.slots == [1, 2])
        }
        let holed = try logHolding([1.5, .nan, 3], [nil, 2, nil])
        defer { try? FileManager.default.removeItem(at: holed) }
        for board in try restoredBoth(holed) {
            #expect(board.numbers.count == 3)
            #expect(board.numbers.first == 1.5 && board.numbers.last == 3)
            #expect(board.numbers.dropFirst().first?.isNaN == true)
            #expect(board.slots == [nil, 2, nil])
        }
    }

    /// A hole in an array whose elements cannot hold one (`[Int]`) is a typed error, not a crash
    /// or a silent zero; the same array without the hole applies (positive control).
    @Test func aHoleInANonOptionalIntegerArrayIsATypedError() throws {
        ModelRegistry.register(DifferentialBoard.self, DifferentialItem.self)
        let scope = Scope(name: "Differential")
        let board = DifferentialBoard()
        scope.root = board
        try scope.apply([SyncFragment(kind: .change, uuid: board.uuid, className: "DifferentialBoard", properties: ["counts": [1, 2]])])
        #expect(board.counts == [1, 2])
        #expect(throws: ModelError.wrongType(property: "counts", expected: "an integer", got: "null")) {
            try scope.apply([SyncFragment(kind: .change, uuid: board.uuid, className: "DifferentialBoard", properties: ["counts": [1, .null]])])
        }
        #expect(board.counts == [1, 2])
    }

    // MARK: - Writing a random log

    static func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-differential-\(UUID().uuidString).log")
    }

    /// Writes a snapshot and `changeSets` random change sets (with a compaction now and then) through
    /// `FragmentLog`; returns the state written.
    static func writeRandomLog(at url: URL, random: inout SeededGenerator) throws -> JSON {
        let scope = Scope(name: "Differential")
        let board = DifferentialBoard(uuid: random.uuid())
        scope.root = board
        let log = FragmentLog(url: url, fsync: .never)
        try log.attach(to: scope)
        var editor = RandomEditor(board: board)
        for _ in 0..<changeSets {
            let edits = random.int(below: 4) + 1
            scope.modify {
                for _ in 0..<edits { editor.edit(random: &random) }
            }
            if random.int(below: 12) == 0 { try log.compact() }
        }
        try log.close()
        return scope.stateJSON()
    }

    // MARK: - Restoring

    /// The records of the log at `url`, in order.
    static func records(at url: URL) throws -> [(kind: LogRecord.Kind, offset: Int, payload: [UInt8])] {
        var records: [(kind: LogRecord.Kind, offset: Int, payload: [UInt8])] = []
        _ = try LogFile.forEachRecord(at: url) { kind, offset, payload in records.append((kind, offset, Array(payload))) }
        return records
    }

    /// The fast path: `FragmentLog.attach`, which reads every record it can with `LogReplay`.
    static func restoreThroughLog(_ url: URL) throws -> (Scope, records: Int) {
        let scope = Scope(name: "Differential")
        let log = FragmentLog(url: url, fsync: .never)
        let report = try log.attach(to: scope)
        try log.close()
        return (scope, report.records)
    }

    /// The general path: each record decoded into a ``FragmentLogEntry``, its root made (or taken
    /// over) as `FragmentLog` does for a record it cannot replay, and its fragments applied with
    /// `Scope.apply`.
    static func restoreThroughApply(_ url: URL) throws -> Scope {
        let scope = Scope(name: "Differential")
        for record in try records(at: url) {
            let entry = try record.payload.withUnsafeBytes { bytes in
                try FragmentLogEntry(kind: record.kind, payload: bytes, offset: record.offset)
            }
            #expect(entry.sequence == nil && entry.settled == nil, "no sync: every change set is settled as made")
            if let rootUUID = entry.root {
                if scope.root == nil, let fragment = entry.fragments.first(where: { $0.uuid == rootUUID }) {
                    scope.root = try ModelRegistry.make(className: fragment.className, uuid: rootUUID)
                } else {
                    scope.adoptRootUUID(rootUUID)
                }
            }
            try scope.apply(entry.fragments)
        }
        return scope
    }

    /// Whether `LogReplay` reads `payload` itself (rather than handing it to the general reader).
    static func fastPathAccepts(_ payload: [UInt8]) throws -> Bool {
        let cache = LogReplayCache(scope: Scope(name: "Differential"))
        return try payload.withUnsafeBytes { bytes in try LogReplay.prepare(payload: bytes, offset: 0, cache: cache) } != nil
    }

    /// Copies the log at `url` to `target` with every payload parsed and written again by `write`.
    static func rewrite(_ url: URL, to target: URL, _ write: (JSON) -> [UInt8]) throws {
        let (file, _) = try LogFile.open(at: target, fsync: .never)
        for record in try records(at: url) { try file.append(record.kind, write(try JSON(parsing: record.payload))) }
        try file.close()
    }

    /// Where two states differ, one line per root, object, class or property; empty when they are equal.
    static func differences(_ lhs: JSON, _ rhs: JSON) -> String {
        var lines: [String] = []
        if lhs["root"] != rhs["root"] { lines.append("root: \(lhs["root"] ?? .null) vs \(rhs["root"] ?? .null)") }
        let left = lhs["objects"]?.objectValue ?? [:]
        let right = rhs["objects"]?.objectValue ?? [:]
        for uuid in Set(left.keys).union(right.keys).sorted() {
            guard let l = left[uuid], let r = right[uuid] else {
                lines.append("\(uuid): only in the \(left[uuid] == nil ? "second" : "first")")
                continue
            }
            if l["clsName"] != r["clsName"] { lines.append("\(uuid): class \(l["clsName"] ?? .null) vs \(r["clsName"] ?? .null)") }
            let lp = l["properties"]?.objectValue ?? [:]
            let rp = r["properties"]?.objectValue ?? [:]
            for key in Set(lp.keys).union(rp.keys).sorted() where lp[key] != rp[key] {
                lines.append("\(uuid).\(key): \(lp[key] ?? .null) vs \(rp[key] ?? .null)")
            }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: - Helpers

    /// A failure with a message.
    /// Random edits of a board's tree: values of every type, items added, removed, moved and brought
    /// back, references set and cleared.
    @MainActor
    struct RandomEditor {
        let board: DifferentialBoard
        /// Items taken out of the tree, which may come back.
        var removed: [DifferentialItem] = []

        static let strings = ["", "a", "hello world", #"quote " and back \ slash"#, "tab\tnew\nline\r", "é ü 😀 ∑",
                              "\u{1}\u{1F}", "/path/to/", "<a href='x'>&amp;</a>", "\u{2028}\u{FEFF}"]
        static let doubles: [Double] = [0, -0.0, 1.5, -2.25e-10, 1e300, .pi, 12, -7, .nan, .infinity, -.infinity,
                                        Double(Int64.max), .leastNonzeroMagnitude]

        /// Every item in the tree, each once, in a stable order.
        func items() -> [DifferentialItem] {
            var seen: Set<ObjectIdentifier> = []
            var order: [DifferentialItem] = []
            func visit(_ item: DifferentialItem?) {
                guard let item, seen.insert(ObjectIdentifier(item)).inserted else { return }
                order.append(item)
                item.children.forEach(visit)
                visit(item.next)
            }
            board.items.forEach(visit)
            visit(board.featured)
            return order
        }

        /// `item` and every item it contains (through `children`).
        func descendants(of item: DifferentialItem) -> Set<ObjectIdentifier> {
            var found: Set<ObjectIdentifier> = []
            var stack = [item]
            while let next = stack.popLast() {
                guard found.insert(ObjectIdentifier(next)).inserted else { continue }
                stack += next.children
            }
            return found
        }

        func newItem(random: inout SeededGenerator, depth: Int = 0) -> DifferentialItem {
            let item = DifferentialItem(uuid: random.uuid())
            item.label = random.pick(Self.strings)
            item.weight = random.pick(Self.doubles)
            if depth < 2, random.chance(3) {
                item.children = (0..<random.int(below: 3)).map { _ in newItem(random: &random, depth: depth + 1) }
            }
            return item
        }

        /// Inserts `item` into the board's items or the children of an item that it does not contain.
        func insert(_ item: DifferentialItem, random: inout SeededGenerator) {
            let excluded = descendants(of: item)
            let hosts = items().filter { !excluded.contains(ObjectIdentifier($0)) }
            if hosts.isEmpty || random.chance(2) {
                board.items.insert(item, at: random.int(below: board.items.count + 1))
            } else {
                let host = random.pick(hosts)
                host.children.insert(item, at: random.int(below: host.children.count + 1))
            }
        }

        /// Takes a random item out of the collection holding it (nil when no collection holds one).
        func takeOut(random: inout SeededGenerator) -> DifferentialItem? {
            let hosts = items().filter { !$0.children.isEmpty }
            if !board.items.isEmpty, hosts.isEmpty || random.chance(2) {
                return board.items.remove(at: random.int(below: board.items.count))
            }
            guard !hosts.isEmpty else { return nil }
            let host = random.pick(hosts)
            return host.children.remove(at: random.int(below: host.children.count))
        }

        mutating func edit(random: inout SeededGenerator) {
            switch random.int(below: 11) {
            case 0, 1, 2:
                setBoardValue(random: &random)
            case 3:
                if let item = items().randomElement(using: &random) {
                    if random.chance(2) { item.label = random.pick(Self.strings) } else { item.weight = random.pick(Self.doubles) }
                }
            case 4:
                insert(newItem(random: &random), random: &random)
            case 5:
                if let item = takeOut(random: &random) { removed.append(item) }
            case 6:
                if let item = takeOut(random: &random) { insert(item, random: &random) }  // a move
            case 7:
                if !removed.isEmpty {
                    let item = removed.remove(at: random.int(below: removed.count))
                    if !items().contains(where: { $0 === item }) { insert(item, random: &random) }
                }
            case 8:
                let candidates = items() + removed
                board.featured = random.chance(4) ? nil : candidates.randomElement(using: &random)
            case 9:
                if let item = items().randomElement(using: &random) {
                    let candidates = items() + removed
                    item.next = random.chance(3) ? nil : candidates.randomElement(using: &random)
                }
            default:
                board.items.shuffle(using: &random)
                if random.chance(3), !board.items.isEmpty { removed.append(board.items.removeLast()) }
                board.cursor += 1  // local: never logged
            }
        }

        func setBoardValue(random: inout SeededGenerator) {
            let board = self.board
            switch random.int(below: 19) {
            case 0: board.title = random.pick(Self.strings)
            case 1: board.note = random.chance(3) ? nil : random.pick(Self.strings)
            case 2: board.count = random.pick([0, 1, -1, Int.max, Int.min, Int(truncatingIfNeeded: random.next())])
            case 3: board.small = Int8(truncatingIfNeeded: random.next())
            case 4: board.big = random.pick([0, UInt64(Int64.max) + 1, UInt64.max, random.next()])
            case 5: board.ratio = random.pick(Self.doubles)
            case 6: board.maybeRatio = random.chance(3) ? nil : random.pick(Self.doubles)
            case 7: board.scale = random.pick([Float(0.1), 1, -3.5, .greatestFiniteMagnitude, .nan, Float(random.pick(Self.doubles))])
            case 8: board.flag.toggle()
            case 9: board.maybeFlag = random.pick([nil, true, false])
            case 10: board.stamp = Date(timeIntervalSince1970: Double(random.int(below: 2_000_000_000)) + random.pick([0, 0.5, 0.001]))
            case 11: board.blob = Data((0..<random.int(below: 9)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            case 12: board.link = random.pick([nil, URL(string: "https://example.com/a?b=c&d=%20e#f"), URL(string: "file:///tmp/x%22y")])
            case 13: board.tag = random.chance(3) ? nil : random.uuid()
            case 14: board.color = ModelColor(rgba: UInt32(truncatingIfNeeded: random.next()))
            case 15: board.mood = random.pick([.calm, .busy, .quoted])
            case 16: board.maybeMood = random.pick([nil, .calm, .busy, .quoted])
            // No NaN in an array here: NaN != NaN would make the state comparison fail; holes are
            // covered by `holesInArraysRestoreThroughTheLogAndThroughApply`.
            case 17: board.numbers = (0..<random.int(below: 5)).map { _ in random.pick(Self.doubles.filter { !$0.isNaN }) }
            default: board.words = random.chance(3) ? nil : (0..<random.int(below: 4)).map { _ in random.pick(Self.strings) }
            }
        }
    }

    /// Writes JSON as text the log writer never produces: keys shuffled (else in the log writer's
    /// order, or `keyOrder`), whitespace between tokens, characters of strings and keys escaped
    /// (`\uXXXX`, surrogate pairs, `\/`). Numbers are written as the JSON writer writes them, so
    /// every value reads back the same.
    struct TextVariant {
        /// The order in which the log writer writes a record's keys and a fragment's.
        static let logOrder = ["root", "fragments", "type", "uuid", "clsName", "properties"]

        var shufflesKeys: Bool
        var addsWhitespace: Bool
        var escapes: Bool
        /// Keys written first, in this order, wherever they occur (the rest sorted, or shuffled).
        var keyOrder: [String]

        init(shufflesKeys: Bool, addsWhitespace: Bool, escapes: Bool, keyOrder: [String]? = nil) {
            self.shufflesKeys = shufflesKeys
            self.addsWhitespace = addsWhitespace
            self.escapes = escapes
            self.keyOrder = keyOrder ?? (shufflesKeys ? [] : Self.logOrder)
        }

        mutating func write(_ value: JSON, random: inout SeededGenerator) -> [UInt8] {
            var out: [UInt8] = []
            space(&out, &random)
            write(value, &out, &random)
            space(&out, &random)
            return out
        }

        private func space(_ out: inout [UInt8], _ random: inout SeededGenerator) {
            guard addsWhitespace, random.chance(2) else { return }
            out += random.pick([" ", "\n", "\t", "  ", "\r\n"]).utf8
        }

        private func write(_ value: JSON, _ out: inout [UInt8], _ random: inout SeededGenerator) {
            switch value {
            case .null, .bool, .int, .uint, .double:
                out += value.serialized()
            case .string(let text):
                string(text, &out, &random)
            case .array(let items):
                out.append(UInt8(ascii: "["))
                for (index, item) in items.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    space(&out, &random)
                    write(item, &out, &random)
                    space(&out, &random)
                }
                out.append(UInt8(ascii: "]"))
            case .object(let members):
                var keys = members.keys.sorted()
                if shufflesKeys { keys.shuffle(using: &random) }
                let first = keyOrder.filter { members[$0] != nil }
                keys = first + keys.filter { !first.contains($0) }
                out.append(UInt8(ascii: "{"))
                for (index, key) in keys.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    space(&out, &random)
                    string(key, &out, &random)
                    space(&out, &random)
                    out.append(UInt8(ascii: ":"))
                    space(&out, &random)
                    write(members[key] ?? .null, &out, &random)
                    space(&out, &random)
                }
                out.append(UInt8(ascii: "}"))
            }
        }

        private func string(_ text: String, _ out: inout [UInt8], _ random: inout SeededGenerator) {
            func unicode(_ unit: UInt16) {
                let hex = String(unit, radix: 16, uppercase: random.chance(2))
                out += ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8
            }
            out.append(UInt8(ascii: "\""))
            for scalar in text.unicodeScalars {
                let escaped = escapes && random.chance(3)
                switch scalar {
                case "\"": out += #"\""#.utf8
                case "\\": out += #"\\"#.utf8
                case "/" where escaped: out += #"\/"#.utf8
                case "\n" where !escaped: out += #"\n"#.utf8
                case _ where scalar.value < 0x20 || escaped:
                    for unit in String(scalar).utf16 { unicode(unit) }
                default:
                    out += String(scalar).utf8
                }
            }
            out.append(UInt8(ascii: "\""))
        }
    }
}

/// A value type whose raw values need escaping on the wire.
enum DifferentialMood: String, PropertyValue, Sendable {
    case calm
    case busy
    case quoted = "say \"hi\" \\ to/é 😀\n"
}

/// The root of the differential test's trees: a property of every value type.
final class DifferentialBoard: ModelObject {
    @Property var title = ""
    @Property var note: String?
    @Property var count = 0
    @Property var small: Int8 = 0
    @Property var big: UInt64 = 0
    @Property var ratio = 0.0
    @Property var maybeRatio: Double?
    @Property var scale: Float = 1
    @Property var flag = false
    @Property var maybeFlag: Bool?
    @Property var stamp = Date(timeIntervalSince1970: 0)
    @Property var blob = Data()
    @Property var link: URL?
    @Property var tag: UUID?
    @Property var color = ModelColor.red
    @Property var mood = DifferentialMood.calm
    @Property var maybeMood: DifferentialMood?
    @Property var numbers: [Double] = []
    @Property var slots: [Int?] = []
    @Property var counts: [Int] = []
    @Property var words: [String]?
    @Property var items: [DifferentialItem] = []
    @Property var featured: DifferentialItem?
    @Property(local: true) var cursor = 0
}

/// An item of the differential test's trees: contained by the board or another item, referenced
/// from anywhere.
final class DifferentialItem: ModelObject {
    @Property var label = ""
    @Property var weight = 0.0
    @Property var next: DifferentialItem?
    @Property var children: [DifferentialItem] = []
}

/// What the random edits draw from a seeded generator (`SeededGenerator`, SplitMix64: a seed
/// reproduces its log).
extension SeededGenerator {
    mutating func int(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func chance(_ oneIn: Int) -> Bool { int(below: oneIn) == 0 }

    mutating func pick<T>(_ choices: [T]) -> T { choices[int(below: choices.count)] }

    mutating func uuid() -> UUID {
        let (a, b) = (next(), next())
        return withUnsafeBytes(of: (a, b)) { bytes in
            UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                        bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        }
    }
}
