import ContrailFuzz
@testable import ContrailServer
import Foundation
import Testing

/// A commit skips the O(objects) garbage collection when it can remove nothing (no reference lost
/// an object, nothing was unreachable before, every created object is reached): the scope must end
/// exactly as when every change of a reference collects.
@Suite("Garbage collection skipped only when it removes nothing")
struct GarbageCollectionSkipTests {
    @Test func randomHistoriesEndAsWithACollectionAfterEveryReferenceChange() throws {
        var random = SplitMix64(seed: 2_526)
        var skipped = 0
        for history in 0..<40 {
            let root = UUID()
            var fast = ScopeStore(rootUUID: root)
            var full = ScopeStore(rootUUID: root)
            full.skipsNeedlessCollections = false
            var items: [UUID] = []        // the root's collection, as the histories write it
            var everMade: [UUID] = []
            func apply(_ fragments: [SyncFragment]) {
                let a = fast.apply(fragments, atomic: false, maxObjects: 100_000)
                let b = full.apply(fragments, atomic: false, maxObjects: 100_000)
                #expect(a.replies == b.replies, "history \(history)")
            }
            func collection(_ list: [UUID]) -> JSON { .array(list.map { .string($0.wireString) }) }
            apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": collection([]), "pinned": .null])])
            for step in 0..<60 {
                switch random.next() % 7 {
                case 0, 1:  // append new items, each maybe pointing at another item
                    let new = (0..<Int(random.next() % 3 + 1)).map { _ in UUID() }
                    let target = everMade.isEmpty ? nil : everMade[Int(random.next() % UInt64(everMade.count))]
                    let adds = new.map { SyncFragment(kind: .add, uuid: $0, className: "Item",
                                                      properties: ["next": target.map { .string($0.wireString) } ?? .null]) }
                    items += new
                    everMade += new
                    apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": collection(items)])] + adds)
                case 2 where !items.isEmpty:  // remove one
                    items.remove(at: Int(random.next() % UInt64(items.count)))
                    apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": collection(items)])])
                case 3 where items.count > 1:  // move one
                    items.swapAt(0, items.count - 1)
                    apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": collection(items)])])
                case 4:  // pin one, or unpin
                    let pinned = items.isEmpty || random.next() % 3 == 0 ? JSON.null : .string(items[Int(random.next() % UInt64(items.count))].wireString)
                    apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["pinned": pinned])])
                case 5:  // two new objects naming each other, reached from nothing
                    let (a, b) = (UUID(), UUID())
                    everMade += [a, b]
                    apply([SyncFragment(kind: .add, uuid: a, className: "Item", properties: ["next": .string(b.wireString)]),
                           SyncFragment(kind: .add, uuid: b, className: "Item", properties: ["next": .string(a.wireString)])])
                default:  // an item of the list points elsewhere
                    guard let item = items.randomElement(using: &random), let other = everMade.randomElement(using: &random) else { continue }
                    apply([SyncFragment(kind: .change, uuid: item, className: "Item", properties: ["next": .string(other.wireString)])])
                }
                #expect(fast.objects == full.objects, "history \(history) step \(step)")
                items = items.filter { fast.objects[$0] != nil }
                if fast.collectionValue(root, "items") != nil { items = fast.collectionValue(root, "items") ?? items }
            }
            skipped += fast.skippedCollections
        }
        // Positive control: the fast store did skip collections (appends to the list).
        #expect(skipped > 100)
    }
}
