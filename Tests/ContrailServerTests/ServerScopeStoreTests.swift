import Contrail
@testable import ContrailServer
import Foundation
import Testing

@Suite("Server scope state")
struct ServerScopeStoreTests {
    func change(_ uuid: UUID, _ properties: [String: JSON], bases: [String: [UUID]]? = nil) -> SyncFragment {
        SyncFragment(kind: .change, uuid: uuid, className: "Board", properties: properties, bases: bases)
    }

    /// A repeated change set with a counter delta is answered with the counter's total even where
    /// the total it sent matches: its sender may have fetched the scope in between and count the
    /// delta twice. A plain value it sent that matches the scope gets nothing (positive control).
    @Test func aRepeatedCounterDeltaIsAnsweredWithTheTotal() {
        var store = ScopeStore()
        let root = store.rootUUID
        let id = UUID()
        let fragment = SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["likes": 2, "title": "t"],
                                    counterDeltas: ["likes": 2])
        let first = store.apply([fragment], atomic: false, maxObjects: 100, changeSetID: id)
        #expect(first.replies.allSatisfy { $0.isAccepted } && !first.repeated)
        let again = store.apply([fragment], atomic: false, maxObjects: 100, changeSetID: id)
        #expect(again.repeated)
        #expect(again.replies.first?.modifications == ["likes": 2])
        #expect(store.objects[root]?.properties["likes"] == 2, "applied once")
    }

    /// A reference that arrives after its target was collected must not teach the server that the
    /// property holds plain strings (the next removal would then collect a pinned object).
    @Test func referenceToACollectedObjectIsRejectedWhileTheKindIsOpen() {
        var store = ScopeStore()
        let root = store.rootUUID
        let card = UUID()
        let added = store.apply([
            change(root, ["cards": .array([.string(card.wireString)])]),
            SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["votes": 0]),
        ], atomic: false, maxObjects: 100)
        #expect(added.replies.allSatisfy { $0.isAccepted })
        let removed = store.apply([change(root, ["cards": .array([])])], atomic: false, maxObjects: 100)
        #expect(removed.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[card] == nil)

        let late = store.apply([change(root, ["pinned": .string(card.wireString)])], atomic: false, maxObjects: 100)
        #expect(late.replies.first?.error?.message == "No such ModelObject '\(card.wireString)' at 'pinned'")

        // A UUID that names no object at all is a dangling reference too (no poison, issue 8): the
        // server cannot tell it from a UUID-valued property, and accepting it could leave a scope
        // that typed clients cannot fetch.
        let plain = UUID()
        let value = store.apply([change(root, ["token": .string(plain.wireString)])], atomic: false, maxObjects: 100)
        #expect(value.replies.first?.error?.message == "No such ModelObject '\(plain.wireString)' at 'token'")
        let text = store.apply([change(root, ["token": "not a uuid"])], atomic: false, maxObjects: 100)
        #expect(text.replies.allSatisfy { $0.isAccepted })
    }

    /// An insert next to an element another client removed meanwhile: the element is in the
    /// sender's base, so it is a concurrent removal (the merge drops it), not a dangling reference;
    /// the insert is kept. A reference the sender added that names no object is still rejected.
    @Test func insertNextToAConcurrentlyRemovedElementIsMergedNotRejected() {
        var store = ScopeStore()
        let root = store.rootUUID
        let (kept, removed, inserted) = (UUID(), UUID(), UUID())
        let setUp = store.apply([
            change(root, ["shelf": .array([.string(kept.wireString), .string(removed.wireString)])]),
            SyncFragment(kind: .add, uuid: kept, className: "Item", properties: ["votes": 0]),
            SyncFragment(kind: .add, uuid: removed, className: "Item", properties: ["votes": 0]),
        ], atomic: false, maxObjects: 100)
        #expect(setUp.replies.allSatisfy { $0.isAccepted })
        let removal = store.apply([change(root, ["shelf": .array([.string(kept.wireString)])],
                                          bases: ["shelf": [kept, removed]])], atomic: false, maxObjects: 100)
        #expect(removal.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[removed] == nil)

        let insert = store.apply([
            SyncFragment(kind: .add, uuid: inserted, className: "Item", properties: ["votes": 0]),
            change(root, ["shelf": .array([.string(kept.wireString), .string(removed.wireString), .string(inserted.wireString)])],
                   bases: ["shelf": [kept, removed]]),
        ], atomic: true, maxObjects: 100, changeSetID: UUID())
        #expect(insert.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[root]?.properties["shelf"] == .array([.string(kept.wireString), .string(inserted.wireString)]))

        // Positive control for the poison rule: an element outside the base that names nothing.
        let stranger = UUID()
        let poisoned = store.apply([change(root, ["shelf": .array([.string(kept.wireString), .string(stranger.wireString)])],
                                           bases: ["shelf": [kept]])], atomic: false, maxObjects: 100)
        #expect(poisoned.replies.first?.isAccepted == false)
    }

    /// A change set rejected whole is not remembered as applied: sent again (its first reply may
    /// have been lost), it is validated afresh instead of being answered as accepted.
    @Test func aRejectedChangeSetIsNotAnsweredAsADuplicate() {
        var store = ScopeStore()
        let root = store.rootUUID
        let id = UUID()
        let missing = UUID()
        let first = store.apply([change(root, ["pinned": .string(missing.wireString)])], atomic: true, maxObjects: 100, changeSetID: id)
        #expect(first.replies.first?.isAccepted == false)
        let again = store.apply([change(root, ["pinned": .string(missing.wireString)])], atomic: true, maxObjects: 100, changeSetID: id)
        #expect(again.replies.first?.isAccepted == false)
        #expect(!again.repeated)

        // Positive control: an accepted change set sent again is answered as a duplicate (no new effect).
        let accepted = UUID()
        let applied = store.apply([change(root, ["title": "a"])], atomic: false, maxObjects: 100, changeSetID: accepted)
        #expect(applied.accepted.count == 1)
        let resent = store.apply([change(root, ["title": "a"])], atomic: false, maxObjects: 100, changeSetID: accepted)
        #expect(resent.accepted.isEmpty && resent.replies.allSatisfy { $0.isAccepted })
        #expect(resent.repeated, "the reply says so (Protocol §8.11), so the client counts no drops from it")
    }

    /// A move from one collection to another of an element another client removed meanwhile: the
    /// move wins (issue 23: the remover wanted it out of `shelf`, the mover wants it in `items`), and
    /// the server brings the object back as it last had it; only when it no longer remembers the
    /// object (past the bound of deleted objects it keeps) is the element dropped, and then the rest
    /// of the change set still applies: it is not refused as a dangling reference.
    @Test(arguments: [true, false])
    func aMoveOfAConcurrentlyRemovedElementWinsWhileTheServerRemembersIt(remembered: Bool) {
        var store = ScopeStore(deletedCapacity: remembered ? 10 : 0)
        let root = store.rootUUID
        let (moved, added) = (UUID(), UUID())
        _ = store.apply([
            change(root, ["shelf": .array([.string(moved.wireString)]), "items": .array([])]),
            SyncFragment(kind: .add, uuid: moved, className: "Item", properties: ["votes": 4]),
        ], atomic: false, maxObjects: 100)
        let removal = store.apply([change(root, ["shelf": .array([])], bases: ["shelf": [moved]])], atomic: false, maxObjects: 100)
        #expect(removal.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[moved] == nil)

        let move = store.apply([
            change(root, ["items": .array([.string(added.wireString), .string(moved.wireString)]), "shelf": .array([])],
                   bases: ["items": [], "shelf": [moved]]),
            SyncFragment(kind: .add, uuid: added, className: "Item", properties: ["votes": 0]),
        ], atomic: true, maxObjects: 100, changeSetID: UUID())
        #expect(move.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[added] != nil)
        if remembered {
            #expect(store.objects[root]?.properties["items"] == .array([.string(added.wireString), .string(moved.wireString)]))
            #expect(store.objects[moved]?.properties["votes"] == 4, "back as the server last had it")
            #expect(move.accepted.last == SyncFragment(kind: .add, uuid: moved, className: "Item", properties: ["votes": 4]),
                    "the other replicas get it back whole")
        } else {
            #expect(store.objects[root]?.properties["items"] == .array([.string(added.wireString)]))
            #expect(store.objects[moved] == nil)
        }
    }
}
