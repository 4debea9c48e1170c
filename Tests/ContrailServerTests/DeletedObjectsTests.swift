import Contrail
@testable import ContrailServer
import Foundation
import Testing

/// The server's memory of deleted objects (`DeletedObjects` in `ScopeStore`): bounded, in
/// snapshots, and what an `add` of a deleted object brings back.
@Suite struct DeletedObjectsTests {
    func change(_ uuid: UUID, _ properties: [String: JSON], bases: [String: [UUID]]? = nil) -> SyncFragment {
        SyncFragment(kind: .change, uuid: uuid, className: "Board", properties: properties, bases: bases)
    }

    func list(_ uuids: [UUID]) -> JSON { .array(uuids.map { .string($0.wireString) }) }

    /// A store whose root holds `items`, each an Item with one Note in `notes`; returns the notes.
    func seeded(_ store: inout ScopeStore, items: [UUID]) -> [UUID] {
        let notes = items.map { _ in UUID() }
        var fragments = [change(store.rootUUID, ["items": list(items)])]
        for (item, note) in zip(items, notes) {
            fragments.append(SyncFragment(kind: .add, uuid: item, className: "Item", properties: ["label": "i", "notes": list([note])]))
            fragments.append(SyncFragment(kind: .add, uuid: note, className: "Note", properties: ["text": "n"]))
        }
        #expect(store.apply(fragments, atomic: true, maxObjects: 100).replies.allSatisfy { $0.isAccepted })
        return notes
    }

    @Test func anAddOfADeletedObjectKeepsItsLastStateAndBringsBackWhatItReferenced() {
        var store = ScopeStore()
        let item = UUID()
        let note = seeded(&store, items: [item])[0]
        _ = store.apply([change(store.rootUUID, ["items": list([])])], atomic: false, maxObjects: 100)
        #expect(store.objects[item] == nil && store.objects[note] == nil)
        // The sender knew the item without its note and with another label.
        let outcome = store.apply([
            change(store.rootUUID, ["items": list([item])], bases: ["items": []]),
            SyncFragment(kind: .add, uuid: item, className: "Item", properties: ["label": "old", "notes": list([]), "votes": 2]),
        ], atomic: false, maxObjects: 100)
        #expect(outcome.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[item]?.properties == ["label": "i", "notes": list([note]), "votes": 2],
                "the server's values stay; the sender fills in what the last state lacks")
        #expect(store.objects[note]?.properties == ["text": "n"])
        #expect(outcome.replies[1].modifications == ["label": "i", "notes": list([note])], "the reply carries the server's values")
        #expect(outcome.accepted.map(\.kind) == [.change, .add, .add] && outcome.accepted.last?.uuid == note)
        // Positive control: an add of an object the server never had takes the sender's values.
        let fresh = UUID()
        _ = store.apply([
            change(store.rootUUID, ["items": list([item, fresh])], bases: ["items": [item]]),
            SyncFragment(kind: .add, uuid: fresh, className: "Item", properties: ["label": "new", "notes": list([])]),
        ], atomic: false, maxObjects: 100)
        #expect(store.objects[fresh]?.properties == ["label": "new", "notes": list([])])
    }

    @Test func theMemoryIsBoundedOldestFirst() {
        var store = ScopeStore(deletedCapacity: 2)
        let items = [UUID(), UUID()]
        _ = seeded(&store, items: items)
        _ = store.apply([change(store.rootUUID, ["items": list([])])], atomic: false, maxObjects: 100)
        #expect(store.deleted.count == 2, "4 objects deleted, the last 2 kept")
        #expect(store.deleted.all.count == 2)
    }

    @Test func aSnapshotKeepsTheDeletedObjects() throws {
        var store = ScopeStore()
        let item = UUID()
        let note = seeded(&store, items: [item])[0]
        _ = store.apply([change(store.rootUUID, ["items": list([])])], atomic: false, maxObjects: 100)
        let restored = try #require(ScopeStore(snapshot: store.snapshotJSON(name: "s")))
        #expect(restored.deleted[item]?.properties["notes"] == list([note]))
        #expect(restored.deleted[note]?.className == "Note")
        #expect(restored.deleted.all.map(\.0) == store.deleted.all.map(\.0), "oldest first, as before")
        // Positive control: a store with nothing deleted writes no `deleted` member.
        #expect(ScopeStore().snapshotJSON(name: "s")["deleted"] == nil)
    }
}

extension DeletedObjectsTests {
    /// A change set partly rejected, resent after its reply was lost (a restart): the repeat is not
    /// answered "accepted" for what is not in the scope, so the sender does not count it as applied.
    @Test func aRepeatAnswersObjectsTheScopeDoesNotHoldAsNotFound() {
        var store = ScopeStore()
        let (missing, note) = (UUID(), UUID())
        let id = UUID()
        let fragments = [
            change(store.rootUUID, ["title": "t"]),
            SyncFragment(kind: .add, uuid: note, className: "Note", properties: ["text": "n"]),
            SyncFragment(kind: .change, uuid: missing, className: "Item", properties: ["notes": list([note])], bases: ["notes": []]),
        ]
        let first = store.apply(fragments, atomic: false, maxObjects: 100, changeSetID: id)
        #expect(first.replies.map(\.isAccepted) == [true, false, false])
        let again = store.apply(fragments, atomic: false, maxObjects: 100, changeSetID: id)
        #expect(again.repeated)
        #expect(again.replies.map(\.isAccepted) == [true, false, false], "positive control: the root's fragment stays accepted")
    }
}
