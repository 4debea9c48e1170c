import Foundation
import Synchronization
import Testing
@testable import Contrail
@testable import ContrailWire

/// Issue 30: a collection change skips its common prefix and suffix before anything is diffed or
/// read. `ModelObject.collectionEdit` (what relinks children and notifies) must give an edit as
/// small as the diff of the whole arrays that turns the old array into the new one, and the
/// versions a change set keeps from models (`CollectionVersion.next(models:)`) must be the ones
/// the whole UUID arrays give.
@MainActor
@Suite struct CollectionEditTrimTests {
    /// A random edit of `old`: inserts, removals, moves and replacements at random places, from a
    /// pool that may put an object in twice.
    private static func edited(_ old: [Shape], pool: [Shape], random: inout SeededGenerator) -> [Shape] {
        var new = old
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                new.insert(pool.randomElement(using: &random)!, at: Int.random(in: 0...new.count, using: &random))
            case 1 where !new.isEmpty:
                new.remove(at: Int.random(in: 0..<new.count, using: &random))
            case 2 where !new.isEmpty:
                let moved = new.remove(at: Int.random(in: 0..<new.count, using: &random))
                new.insert(moved, at: Int.random(in: 0...new.count, using: &random))
            case 3 where !new.isEmpty:
                new[Int.random(in: 0..<new.count, using: &random)] = pool.randomElement(using: &random)!
            default:
                new.append(pool.randomElement(using: &random)!)
            }
        }
        return new
    }

    @Test func theTrimmedEditIsAsSmallAsTheWholeDiffAndTurnsOldIntoNew() {
        var random = SeededGenerator(seed: 30)
        var trimmedAway = 0
        for round in 0..<2_000 {
            // Small pools make duplicates and ties common; long runs make the prefix and suffix real.
            let pool = (0..<(round % 3 == 0 ? 4 : 40)).map { _ in Shape() }
            let old = (0..<Int.random(in: 0...30, using: &random)).map { _ in pool.randomElement(using: &random)! }
            let new = Self.edited(old, pool: pool, random: &random)
            let (removed, inserted) = ModelObject.collectionEdit(from: old, to: new)
            let diff = (new as [ModelObject]).difference(from: old as [ModelObject], by: ===)
            #expect(removed.count == diff.removals.count, "round \(round)")
            #expect(inserted.count == diff.insertions.count, "round \(round)")
            // Removing at the old offsets (from the back) and inserting at the new ones gives `new`.
            var rebuilt: [ModelObject] = old
            for (element, offset) in removed.sorted(by: { $0.1 > $1.1 }) {
                #expect(rebuilt[offset] === element, "round \(round)")
                rebuilt.remove(at: offset)
            }
            for (element, offset) in inserted.sorted(by: { $0.1 < $1.1 }) { rebuilt.insert(element, at: offset) }
            #expect(rebuilt.count == new.count && zip(rebuilt, new).allSatisfy { $0 === $1 }, "round \(round)")
            let (prefix, suffix) = ModelObject.commonEnds(old, new)
            trimmedAway += prefix + suffix
        }
        // A positive control that the trim did skip elements (it is not a whole diff in disguise).
        #expect(trimmedAway > 10_000)
    }

    @Test func anAppendOrARemovalIsOnlyTheElementsItChanges() {
        let items = (0..<1_000).map { _ in Shape() }
        var longer = items
        longer.insert(Shape(), at: 500)
        let (removed, inserted) = ModelObject.collectionEdit(from: items, to: longer)
        #expect(removed.isEmpty)
        #expect(inserted.count == 1 && inserted[0].0 === longer[500] && inserted[0].1 == 500)
        let (gone, none) = ModelObject.collectionEdit(from: longer, to: items)
        #expect(none.isEmpty && gone.count == 1 && gone[0].1 == 500)
        // Control: a whole replacement is every element.
        let other = (0..<1_000).map { _ in Shape() }
        let (all, allNew) = ModelObject.collectionEdit(from: items, to: other)
        #expect(all.count == 1_000 && allNew.count == 1_000)
    }

    @Test func versionsMadeFromModelsAreTheVersionsOfTheWholeArrays() {
        var random = SeededGenerator(seed: 3_030)
        for round in 0..<300 {
            let pool = (0..<60).map { _ in Shape() }
            var old = Array(pool.prefix(Int.random(in: 0...40, using: &random)))
            var fromModels = CollectionVersion.whole(old.map(\.uuid), retaining: old)
            var fromUUIDs = CollectionVersion.whole(old.map(\.uuid), retaining: old)
            for step in 0..<8 {
                let new = Self.edited(old, pool: pool, random: &random)
                let (prefix, suffix) = ModelObject.commonEnds(old, new)
                let isOnce = { (position: Int) in new.lazy.filter { $0 === new[position] }.count == 1 }
                let nextFromModels = fromModels.next(models: new, baseModels: old, prefix: prefix, suffix: suffix, isOnce: isOnce)
                let nextFromUUIDs = fromUUIDs.next(new.map(\.uuid), base: old.map(\.uuid), models: new, baseModels: old, isOnce: isOnce)
                #expect(nextFromModels.elements == new.map(\.uuid), "round \(round) step \(step)")
                #expect(nextFromUUIDs.elements == new.map(\.uuid), "round \(round) step \(step)")
                #expect(nextFromModels.isDuplicateFree == nextFromUUIDs.isDuplicateFree, "round \(round) step \(step)")
                let edit = nextFromModels.edit(from: fromModels)
                #expect(edit == nextFromUUIDs.edit(from: fromUUIDs), "round \(round) step \(step)")
                if let edit {
                    var applied = old.map(\.uuid)
                    edit.apply(to: &applied)
                    #expect(applied == new.map(\.uuid), "round \(round) step \(step)")
                }
                // Every element of the new version is held alive by it or the versions before it.
                let held = nextFromModels.models
                #expect(new.allSatisfy { held[$0.uuid] === $0 }, "round \(round) step \(step)")
                (old, fromModels, fromUUIDs) = (new, nextFromModels, nextFromUUIDs)
            }
        }
    }

    /// A segment of 2,000 appends is a chain of 2,000 versions, each holding the one before: it is
    /// released on a thread with a 64 KiB stack, which a release that recursed down the chain
    /// overflows (the 50,000-edit bench run crashed so).
    @Test func aLongChainOfVersionsIsReleasedWithoutRecursion() async {
        let items = (0..<2_000).map { _ in Shape() }
        let first = CollectionVersion.whole([], retaining: [])
        let held = Mutex<CollectionVersion?>(Self.appending(items, to: first))
        let isChain = held.withLock { $0?.edit(from: first) == nil && $0?.elements == items.map(\.uuid) }
        #expect(isChain)  // a chain of edits back to `first`, not one whole version
        let released: Bool = await withCheckedContinuation { continuation in
            let thread = Thread {
                held.withLock { $0 = nil }
                continuation.resume(returning: true)
            }
            thread.stackSize = 64 * 1_024
            thread.start()
        }
        #expect(released)
    }

    /// The version after `items` were appended to `version` one by one (one segment).
    private static func appending(_ items: [Shape], to version: CollectionVersion) -> CollectionVersion {
        var version = version
        for count in 1...items.count {
            version = version.next(models: Array(items[0..<count]), baseModels: Array(items[0..<(count - 1)]), prefix: count - 1, suffix: 0,
                                   isOnce: { _ in true })
        }
        return version
    }
}
