import Contrail
import ContrailFuzz
import ContrailWire
import Foundation
import Testing

/// The fragment log's pending records with collections as chained edits (`CollectionEditChain`) and
/// one settle marker per turn: what a restore gets back is what was made, as whole arrays.
@MainActor
@Suite("Fragment log: chained collection edits and settle markers")
struct FragmentLogChainTests {
    init() {
        ModelRegistry.register(Shelf.self, Item.self)
    }

    func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-chain-\(UUID().uuidString).log")
    }

    /// One random offline edit of `shelf`: appends, inserts, removals, moves within and between its
    /// two collections, label and title changes, alone or together in one change set.
    static func edit(_ shelf: Shelf, _ random: inout SplitMix64) {
        func pick(_ items: [Item]) -> Int? { items.isEmpty ? nil : Int(random.next() % UInt64(items.count)) }
        for _ in 0...(random.next() % 2) {
            switch random.next() % 10 {
            case 0, 1, 2:
                let item = Item()
                item.label = "new"
                shelf.left.append(item)
            case 3:
                let item = Item()
                shelf.right.insert(item, at: pick(shelf.right) ?? 0)
            case 4:
                if let index = pick(shelf.left) { shelf.left.remove(at: index) }
            case 5:
                if let index = pick(shelf.left) {
                    let item = shelf.left.remove(at: index)
                    shelf.left.insert(item, at: pick(shelf.left) ?? 0)
                }
            case 6:
                if let index = pick(shelf.left) { shelf.right.append(shelf.left.remove(at: index)) }
            case 7:
                if let index = pick(shelf.left) { shelf.left[index].label = "changed \(random.next() % 100)" }
            case 8:
                shelf.title = "title \(random.next() % 100)"
            default:
                shelf.left.reverse()
            }
        }
    }

    /// A shelf scope edited offline (its change sets stay pending), logged to a new file at `url`.
    func offlineShelf(_ name: String, at url: URL) throws -> (Scope, Shelf, FragmentLog) {
        let scope = Scope(name: name)
        let shelf = Shelf()
        scope.root = shelf
        scope.syncOffline()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        return (scope, shelf, log)
    }

    /// The local change sets a restored scope holds as pending, in order.
    func pending(_ scope: Scope) -> [ChangeSet] {
        scope.history.filter { $0.origin == .local && $0.state == .syncing }
    }

    /// Records holding a `"chain"` member and all change-set records in the file.
    func chainedRecords(at url: URL) throws -> (chained: Int, records: Int) {
        var chained = 0
        var records = 0
        _ = try LogFile.forEachRecord(at: url) { kind, _, payload in
            guard kind == .changeSet else { return }
            records += 1
            if String(decoding: payload, as: UTF8.self).contains(#""chain":"#) { chained += 1 }
        }
        return (chained, records)
    }

    /// Random offline histories (some change sets settle, the log is compacted at random, and a
    /// second session appends to the restored log): every restore gives back each pending change set
    /// with exactly the fragments it was made with (whole arrays and bases, in order), its id, and
    /// the state as made. Control: the file does hold chained records, so they were what was read.
    @Test(arguments: 0..<10)
    func restoredPendingChangeSetsAreTheWholeArraysAsMade(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, shelf, log) = try offlineShelf("chain", at: url)
        var made: [ChangeSet] = []
        for _ in 0..<60 {
            if let changeSet = scope.modify({ Self.edit(shelf, &random) }) { made.append(changeSet) }
            if random.next() % 9 == 0, !made.isEmpty { made.remove(at: Int(random.next() % UInt64(made.count))).settle(.completed) }
            if random.next() % 30 == 0 { try log.compact() }
        }
        try log.close()
        #expect(try chainedRecords(at: url).chained > 0, "the history was written with chained edits")

        // A second session on the restored scope appends more, compacting at random.
        let restored = Scope(name: "chain")
        let reopened = FragmentLog(url: url)
        #expect(try reopened.attach(to: restored).pendingChangeSets == made.count)
        #expect(pending(restored).map(\.fragments) == made.map(\.fragments))
        #expect(restored.stateJSON() == scope.stateJSON())
        restored.syncOffline()
        let restoredShelf = try #require(restored.root as? Shelf)
        var all = pending(restored)
        for _ in 0..<40 {
            if let changeSet = restored.modify({ Self.edit(restoredShelf, &random) }) { all.append(changeSet) }
            if random.next() % 9 == 0, !all.isEmpty { all.remove(at: Int(random.next() % UInt64(all.count))).settle(.completed) }
            if random.next() % 20 == 0 { try reopened.compact() }
        }
        try reopened.close()

        let third = Scope(name: "chain")
        let log3 = FragmentLog(url: url)
        #expect(try log3.attach(to: third).pendingChangeSets == all.count)
        #expect(pending(third).map(\.fragments) == all.map(\.fragments), "seed \(seed)")
        #expect(pending(third).map(\.id) == all.map(\.id))
        #expect(third.stateJSON() == restored.stateJSON())
        try log3.close()
    }

    /// `FragmentLog.history(at:)` gives chained collections back as the whole arrays they were made
    /// with (no compaction, nothing settled: every change set made is in it).
    @Test func historyGivesChainedCollectionsBackWhole() throws {
        var random = SplitMix64(seed: 7)
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, shelf, log) = try offlineShelf("history", at: url)
        let made = (0..<50).compactMap { _ in scope.modify { Self.edit(shelf, &random) } }
        try log.close()
        #expect(try chainedRecords(at: url).chained > 0)
        #expect(try FragmentLog.history(at: url).map(\.fragments) == made.map(\.fragments))
    }

    /// Change sets that settle in one turn get one settle marker (with ranges), written before
    /// `waitUntilDurable` returns; after a restart none of them is pending, and the one that did
    /// not settle is. Control: before the marker, the restored scope would hold all of them.
    @Test func changeSetsSettledInOneTurnShareOneMarker() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, shelf, log) = try offlineShelf("markers", at: url)
        var made: [ChangeSet] = []
        for index in 0..<40 {
            if let changeSet = scope.modify({ shelf.step = index + 1 }) { made.append(changeSet) }
        }
        try await log.waitUntilDurable()
        let copy = url.appendingPathExtension("copy")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: url, to: copy)
        for changeSet in made.prefix(39) where changeSet !== made[20] { changeSet.settle(.completed) }
        try await log.waitUntilDurable()
        var markers: [String] = []
        _ = try LogFile.forEachRecord(at: url) { _, _, payload in
            let text = String(decoding: payload, as: UTF8.self)
            if text.contains(#""settled":"#) { markers.append(text) }
        }
        #expect(markers == [#"{"settled":[[1,20],[22,39]],"fragments":[]}"#])
        try log.close()

        let control = Scope(name: "markers")
        #expect(try FragmentLog(url: copy).attach(to: control).pendingChangeSets == 40)
        let restored = Scope(name: "markers")
        #expect(try FragmentLog(url: url).attach(to: restored).pendingChangeSets == 2)
        #expect(pending(restored).map(\.id) == [made[20].id, made[39].id])
    }

    /// A damaged chained entry or settle marker is a typed error naming the record, never a trap.
    @Test func hostileChainedEntriesAndMarkersAreTypedErrors() throws {
        let valued = #"{"seq":1,"fragments":[{"type":"change","uuid":"6f7a2c1e-0000-4000-8000-000000000001","clsName":"Shelf","properties":{"left":["6f7a2c1e-0000-4000-8000-000000000002"]},"bases":{"left":[]}}]}"#
        let records = [
            #"{"seq":1,"chain":[[0,"6f7a2c1e-0000-4000-8000-000000000001","Shelf","left",[[5,-1]]]],"fragments":[]}"#,
            #"{"seq":1,"chain":[[9,"6f7a2c1e-0000-4000-8000-000000000001","Shelf","left",[]]],"fragments":[]}"#,
            #"{"seq":1,"chain":[["x"]],"fragments":[]}"#,
            // A pending record that gives the chain a value (`valued`), then a reference far past its start.
            valued + "\n" + #"{"seq":2,"chain":[[0,"6f7a2c1e-0000-4000-8000-000000000001","Shelf","left",[[-9223372036854775808,null]]]],"fragments":[]}"#,
            #"{"settled":[[5,2]],"fragments":[]}"#,
            #"{"settled":"all","fragments":[]}"#,
        ]
        /// A log holding a snapshot, then the records of `record` (one per line).
        func log(endingWith record: String) throws -> URL {
            let url = temporaryURL()
            let scope = Scope(name: "hostile")
            scope.root = Shelf()
            let written = FragmentLog(url: url)
            try written.attach(to: scope)
            try written.close()
            let (file, _) = try LogFile.open(at: url)
            for line in record.split(separator: "\n") { try file.append(.changeSet, Array(line.utf8)) }
            try file.close()
            return url
        }
        for record in records {
            let url = try log(endingWith: record)
            defer { try? FileManager.default.removeItem(at: url) }
            #expect(throws: FragmentLogError.self, "\(record)") { try FragmentLog(url: url).attach(to: Scope(name: "hostile")) }
        }
        // Controls: a well-formed marker of nothing pending, and the record that gives the chain a
        // value, are read without an error.
        let url = try log(endingWith: #"{"settled":[[2,5],7],"fragments":[]}"#)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try FragmentLog(url: url).attach(to: Scope(name: "hostile")).pendingChangeSets == 0)
        let valuedURL = try log(endingWith: valued)
        defer { try? FileManager.default.removeItem(at: valuedURL) }
        #expect(try FragmentLog(url: valuedURL).attach(to: Scope(name: "hostile")).pendingChangeSets == 1)
    }
}
