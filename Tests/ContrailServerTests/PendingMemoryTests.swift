@testable import Contrail
import ContrailFuzz
import ContrailSupport
import ContrailWire
import Foundation
import Testing

/// What pending change sets hold in memory (issue 30): a change set that appends to a long
/// collection keeps an edit of the value the one before it left (``CollectionVersion``), in its
/// fragments and in its model values, so n offline appends cost O(n) bytes, not O(n²).
@MainActor
@Suite struct PendingMemoryTests {
    /// A scope with `count` offline appends to one collection, each its own change set.
    @MainActor
    final class Offline {
        let scope: Scope
        let changeSets: [ChangeSet]

        init(appends count: Int) {
            ModelRegistry.register(Shelf.self, Item.self)
            let scope = Scope(name: "offline-\(count)")
            let shelf = Shelf()
            scope.root = shelf
            scope.syncOffline()
            var changeSets: [ChangeSet] = []
            for index in 0..<count {
                let item = Item()
                item.label = "item \(index)"
                if let changeSet = scope.modify({ shelf.left.append(item) }) { changeSets.append(changeSet) }
            }
            self.scope = scope
            self.changeSets = changeSets
        }
    }

    /// Bytes per edit that dropping `count` offline appends (the scope, its objects, its change
    /// sets and undo steps) gives back, read just before and after the drop.
    /// The allocator's count is the whole process's: a test on another thread that allocates during
    /// the drop (an event loop's 256 KiB read buffer) makes it negative, which no drop can be, so
    /// such a reading is taken again (at most five times).
    static func bytesPerEdit(appends count: Int) -> Int {
        var perEdit = 0
        for _ in 0..<5 {
            var offline: Offline? = Offline(appends: count)
            #expect(offline?.changeSets.count == count && offline?.changeSets.allSatisfy { $0.state == .syncing } == true)
            perEdit = CompactStoreTests.bytesFreed(dropping: &offline) / count
            if perEdit > 0 { break }
        }
        return perEdit
    }

    /// The same appends with what the change sets held before (each one's whole array and base,
    /// as its fragments give them back): the positive control of the measurement.
    static func bytesPerEditHoldingWholeArrays(appends count: Int) -> Int {
        let offline = Offline(appends: count)
        var whole: [[SyncFragment]]? = offline.changeSets.map(\.fragments)
        return CompactStoreTests.bytesFreed(dropping: &whole) / count
    }

    /// 1,600 appends cost about what 400 do per edit (linear growth: quadratic would be 4 times as
    /// much), and a few kilobytes at most; holding each change set's whole arrays, as before,
    /// measures the quadratic growth (the control). Two rounds: the smallest for the bounds, the
    /// largest for the control (a drop is measured alone, so rounds hardly differ).
    @Test(.enabled(if: Platform.allocatedBytes() != nil, "needs glibc's allocator accounting (not under ThreadSanitizer)"))
    func offlineAppendsCostBytesLinearInTheirNumber() {
        var small: [Int] = []
        var large: [Int] = []
        var controlSmall: [Int] = []
        var controlLarge: [Int] = []
        for _ in 0..<2 {
            small.append(Self.bytesPerEdit(appends: 400))
            large.append(Self.bytesPerEdit(appends: 1_600))
        }
        controlSmall.append(Self.bytesPerEditHoldingWholeArrays(appends: 400))
        controlLarge.append(Self.bytesPerEditHoldingWholeArrays(appends: 1_600))
                #expect(large.min()! <= 2 * max(small.max()!, 1), "bytes per edit: 400 appends \(small), 1,600 appends \(large)")
        #expect(large.min()! <= 4_000, "bytes per edit at 1,600 appends: \(large)")
        // The measurement sees what a drop gives back: the scope's items alone are hundreds of bytes.
        #expect(small.max()! >= 100, "bytes per edit at 400 appends: \(small)")
        // Control: whole arrays per change set grow with the collection (4 times the collection,
        // about 3 times the bytes per edit or more).
        #expect(controlLarge.max()! >= 3 * controlSmall.min()!, "whole arrays per edit: 400 \(controlSmall), 1,600 \(controlLarge)")
        #expect(controlLarge.max()! > 4 * large.min()!, "whole arrays \(controlLarge) against versions \(large)")
    }

    /// What a change set made, as the old code kept it: the collection's UUIDs before and after.
    struct Expected {
        let changeSet: ChangeSet
        let before: [String: [UUID]]
        let after: [String: [UUID]]
    }

    /// On random histories (inserts, removals, moves within and between two collections, value
    /// writes, remote values applied in between, undo and redo, reverts), every change set's
    /// fragments and values, rebuilt from versions in a random order long after they were made,
    /// are the whole arrays they were made with.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func versionsRebuildTheWholeArraysOnRandomHistories(seed: UInt64) throws {
        ModelRegistry.register(Shelf.self, Item.self)
        var random = SplitMix64(seed: seed)
        let scope = Scope(name: "versions-\(seed)")
        let shelf = Shelf()
        scope.root = shelf
        scope.syncOffline()
        var made: [Expected] = []
        let lists = { ["left": shelf.left.map(\.uuid), "right": shelf.right.map(\.uuid)] }
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(max(count, 1))) }
        for step in 0..<400 {
            let before = lists()
            let choice = random.next() % 20
            var changeSet: ChangeSet?
            switch choice {
            case 0..<8:
                let item = Item()
                item.label = "s\(step)"
                changeSet = scope.modify { random.next() % 2 == 0 ? shelf.left.append(item) : shelf.right.insert(item, at: pick(shelf.right.count + 1)) }
            case 8..<10 where !shelf.left.isEmpty:
                changeSet = scope.modify { _ = shelf.left.remove(at: pick(shelf.left.count)) }
            case 10..<12 where shelf.left.count > 1:
                changeSet = scope.modify {
                    let moved = shelf.left.remove(at: pick(shelf.left.count))
                    shelf.left.insert(moved, at: pick(shelf.left.count + 1))
                }
            case 12 where !shelf.left.isEmpty:
                changeSet = scope.modify { shelf.right.append(shelf.left.removeLast()) }
            case 13:
                changeSet = scope.modify { shelf.title = "t\(step)" }
            case 14:
                // A remote value applied in between: the next local edit starts a new chain.
                let remote = Item()
                remote.label = "r\(step)"
                let uuids = shelf.left.map(\.uuid) + [remote.uuid]
                try scope.apply([
                    SyncFragment(kind: .add, uuid: remote.uuid, className: "Item", properties: ["label": .string("r\(step)"), "count": 0]),
                    SyncFragment(kind: .change, uuid: shelf.uuid, className: "Shelf", properties: ["left": CompactFragments.wire(uuids)]),
                ])
            case 15:
                changeSet = scope.undo()
            case 16:
                changeSet = scope.redo()
            case 18 where !shelf.left.isEmpty:
                // An element twice: no edit for this value (nor, until it goes, for the next ones).
                changeSet = scope.modify { shelf.left.append(shelf.left[pick(shelf.left.count)]) }
            case 17 where !made.isEmpty:
                // A revert (as a refused change set): the replica goes back, nothing is recorded.
                made[pick(made.count)].changeSet.revert()
            default:
                let item = Item()
                changeSet = scope.modify { shelf.left.append(item) }
            }
            if let changeSet { made.append(Expected(changeSet: changeSet, before: before, after: lists())) }
        }
        #expect(made.count > 200)
        var order = Array(made.indices)
        for index in order.indices.reversed() { order.swapAt(index, pick(index + 1)) }
        for index in order + made.indices.reversed() {
            let expected = made[index]
            let fragment = expected.changeSet.fragments.first { $0.uuid == shelf.uuid && $0.kind == .change }
            for key in ["left", "right"] where expected.before[key] != expected.after[key] {
                #expect(fragment?.properties[key] == CompactFragments.wire(expected.after[key]!), "change set \(index), \(key)")
                #expect(fragment?.bases?[key] == expected.before[key], "change set \(index), base of \(key)")
                let change = expected.changeSet.changes.first { $0.object === shelf && $0.property == shelf.info.indexByName[key] }
                #expect((change?.old as? [Item])?.map(\.uuid) == expected.before[key], "change set \(index), old \(key)")
                #expect((change?.new as? [Item])?.map(\.uuid) == expected.after[key], "change set \(index), new \(key)")
            }
        }
        // Kept as versions, not whole (or the test would prove nothing).
        #expect(made.contains { $0.changeSet.stored.collections.count > 0 && $0.changeSet.stored.skeleton.allSatisfy { $0.properties["left"] == nil } })
    }

    /// The flush keeps an append to a long collection as the edit it is, made from the elements'
    /// UUIDs (no wire value): one placement anchored on the last element, the base's count, and a
    /// digest computed when it goes on the wire, continued from the base's over the append. An
    /// element put in twice (the negative) has no edit; taking it out again gives edits back.
    @Test func anAppendIsKeptAsItsEditAndADuplicateIsNot() throws {
        let offline = Offline(appends: 300)
        let (scope, changeSets) = (offline.scope, offline.changeSets)
        let shelf = try #require(scope.root as? Shelf)
        let last = try #require(changeSets.last?.stored.collections.first)
        #expect(last.base.count == 299 && last.new.count == 300)
        let edit = try #require(last.new.edit(from: last.base), "kept as the edit of the version before")
        #expect(edit.removed.isEmpty && edit.placements.count == 1)
        #expect(edit.placements.first?.anchor == shelf.left[298].uuid && edit.placements.first?.element == shelf.left[299].uuid)
        // The wire form: the edit with the base's count and digest, which applied gives the value.
        let base = Array(shelf.left.prefix(299).map(\.uuid))
        let lastStored = try #require(changeSets.last?.stored)
        let sent = try #require(lastStored.withEdits(onto: lastStored.skeleton).first { $0.uuid == shelf.uuid }?.collectionEdits?["left"])
        #expect(sent.baseCount == 299 && sent.baseDigest == CollectionEdit.digest(of: base))
        #expect(sent.applied(to: base) == shelf.left.map(\.uuid))
        #expect(last.new.digest == CollectionEdit.digest(of: shelf.left.map(\.uuid)))
        // The previous version is the base: one chain.
        #expect(changeSets[changeSets.count - 2].stored.collections.first?.new === last.base)

        // Negative: the first item again, at the end.
        let twice = try #require(scope.modify { shelf.left.append(shelf.left[0]) }?.stored.collections.first)
        #expect(twice.new.edit(from: twice.base) == nil && !twice.new.isDuplicateFree)
        #expect(twice.new.elements == shelf.left.map(\.uuid))
        // Taken out again: duplicate-free, an edit again for the change set after.
        let once = try #require(scope.modify { _ = shelf.left.removeLast() }?.stored.collections.first)
        #expect(once.new.isDuplicateFree && once.new.elements == shelf.left.map(\.uuid))
        let item = Item()
        let again = try #require(scope.modify { shelf.left.insert(item, at: 5) }?.stored.collections.first)
        #expect(again.new.edit(from: again.base)?.placements.count == 1)
        #expect(again.new.elements == shelf.left.map(\.uuid))
        #expect(again.new.digest == CollectionEdit.digest(of: shelf.left.map(\.uuid)), "a digest computed whole after an insert")
    }

    /// The trimmed edit the flush makes (``CollectionEdit/init(duplicateFreeBase:new:baseDigest:)``)
    /// is the edit ``CollectionEdit/init(base:new:)`` makes, on random duplicate-free arrays with
    /// appends, inserts, removals and moves.
    @Test func theTrimmedEditIsTheWholeDiff() {
        var random = SplitMix64(seed: 30)
        for round in 0..<300 {
            let count = Int(random.next() % 40)
            let base = (0..<count).map { _ in UUID.random() }
            var new = base
            for _ in 0...(random.next() % 4) {
                switch random.next() % 4 {
                case 0: new.append(.random())
                case 1: new.insert(.random(), at: Int(random.next() % UInt64(new.count + 1)))
                case 2 where !new.isEmpty: new.remove(at: Int(random.next() % UInt64(new.count)))
                default:
                    guard !new.isEmpty else { continue }
                    let moved = new.remove(at: Int(random.next() % UInt64(new.count)))
                    new.insert(moved, at: Int(random.next() % UInt64(new.count + 1)))
                }
            }
            let whole = CollectionEdit(base: base, new: new)
            let trimmed = CollectionEdit(duplicateFreeBase: base, new: new, baseDigest: CollectionEdit.digest(of: base))
            #expect(whole == trimmed, "round \(round)")
            #expect(trimmed.applied(to: base) == new, "round \(round)")
        }
    }

    /// A restore of more pending change sets than the scope's `historyLimit` keeps only the last
    /// ones in `history` (it kept them all); every one is still pending and restored. The control,
    /// a limit above them: every restored change set is there (each with the remote one its
    /// fragments' apply makes).
    @Test func restoredPendingChangeSetsKeepTheHistoryLimit() throws {
        ModelRegistry.register(Shelf.self, Item.self)
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-history-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: url) }
        let scope = Scope(name: "history-limit")
        let shelf = Shelf()
        scope.root = shelf
        scope.syncOffline()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        for index in 0..<40 {
            let item = Item()
            item.label = "item \(index)"
            scope.modify { shelf.left.append(item) }
        }
        try log.close()
        for limit in [10, 1_000] {
            let restored = Scope(name: "history-limit")
            restored.historyLimit = limit
            let reopened = FragmentLog(url: url)
            #expect(try reopened.attach(to: restored).pendingChangeSets == 40)
            if limit == 10 {
                #expect(restored.history.count == 10)
            } else {
                #expect(restored.history.filter { $0.origin == .local }.count == 40)
            }
            #expect((restored.root as? Shelf)?.left.count == 40)
            try reopened.close()
        }
    }
}
