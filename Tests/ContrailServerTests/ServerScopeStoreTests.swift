import Contrail
@testable import ContrailServer
import Foundation
import Testing

@Suite("Server scope state")
struct ServerScopeStoreTests {
    func change(_ uuid: UUID, _ properties: [String: JSON], bases: [String: [UUID]]? = nil) -> SyncFragment {
        SyncFragment(kind: .change, uuid: uuid, className: "Board", properties: properties, bases: bases)
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
}
