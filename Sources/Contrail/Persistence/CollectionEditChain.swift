import Foundation

/// The collections of a fragment log's pending change sets as edits (Protocol §8.24): each pending
/// record holds a collection as an edit of its base rather than as two whole arrays, and a restore
/// turns the edits back into arrays. `values` is the new value of each collection the records met
/// so far wrote, in record order: a compacted tail is written as edits of it (its records' bases
/// are not in the snapshot before them, which holds the values after all of them), and a restore
/// resolves an edit against it or against the scope's value.
@MainActor
struct CollectionEditChain {
    private struct Key: Hashable {
        let uuid: UUID
        let property: String
    }

    private var values: [Key: [UUID]] = [:]

    /// `fragments` with each collection whose base is the chain's value for it written as an edit;
    /// the chain moves on to the new values. O(collection sizes).
    mutating func compacting(_ fragments: [SyncFragment]) -> [SyncFragment] {
        fragments.map { fragment in
            guard fragment.kind == .change, let bases = fragment.bases else { return fragment }
            var chained: [String: [UUID]] = [:]
            for (key, base) in bases {
                let collection = Key(uuid: fragment.uuid, property: key)
                if values[collection] == base { chained[key] = base }
                if let new = fragment.properties[key]?.uuidElements { values[collection] = new }
            }
            guard !chained.isEmpty else { return fragment }
            // Only collections that follow the chain go as edits; the others stay whole with their base.
            var onlyChained = fragment
            onlyChained.bases = chained
            var result = onlyChained.withCollectionEdits()
            for (key, base) in bases where chained[key] == nil {
                result.bases = (result.bases ?? [:]).merging([key: base]) { _, whole in whole }
            }
            return result
        }
    }

    /// `fragments` (a pending record being restored) with every collection edit turned back into an
    /// array and its base: the chain's value or `current(uuid, key)` (the scope's value), whichever
    /// the edit names; when neither (a remote record for the collection came between), the edit
    /// applied to the scope's value (``CollectionEdit/appliedLoosely(to:)``). The chain moves on to
    /// every collection's new value. O(collection sizes).
    mutating func resolving(_ fragments: [SyncFragment], current: (UUID, String) -> [UUID]?) -> [SyncFragment] {
        fragments.map { fragment in
            var resolved = fragment
            if let edits = fragment.collectionEdits {
                resolved.collectionEdits = nil
                for key in edits.keys.sorted() {
                    guard let edit = edits[key] else { continue }
                    let now = current(fragment.uuid, key) ?? []
                    let base = [values[Key(uuid: fragment.uuid, property: key)], now].compactMap { $0 }.first(where: edit.isBase)
                    let new = base.flatMap(edit.applied(to:)) ?? edit.appliedLoosely(to: now)
                    resolved.properties[key] = .array(new.map { .string($0.wireString) })
                    resolved.bases = (resolved.bases ?? [:]).merging([key: base ?? now]) { _, new in new }
                }
            }
            for key in (resolved.bases ?? [:]).keys {
                if let new = resolved.properties[key]?.uuidElements { values[Key(uuid: fragment.uuid, property: key)] = new }
            }
            return resolved
        }
    }
}
