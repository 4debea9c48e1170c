import Foundation

/// A change set's fragments as it keeps them (issue 30): each collection of a `change` fragment
/// sent with its base (§8.4) is taken out of its fragment and kept as two ``CollectionVersion``s,
/// the base and the new value, which the change sets made one after another share (the new value
/// of one is the base of the next) and keep as edits. ``whole`` gives back exactly the fragments
/// the change set was made with.
struct CompactFragments: Sendable {
    /// One collection taken out of a fragment.
    struct Collection: Sendable {
        /// The position of its fragment.
        let fragment: Int
        /// The property's name.
        let key: String
        /// The collection before the change (the fragment's `bases` entry).
        let base: CollectionVersion
        /// The collection after it (the fragment's value).
        let new: CollectionVersion
    }

    /// The fragments without the collections in ``collections`` (their `properties` and `bases`
    /// entries are left out): every other member is as made.
    let skeleton: [SyncFragment]
    /// The collections taken out, in fragment order.
    let collections: [Collection]

    /// Keeps `fragments`, taking out each collection with a base whose value is an array of UUID
    /// strings, its versions chained on `chains`.
    /// O(size of the fragments).
    @MainActor
    init(_ fragments: [SyncFragment], chains: inout CollectionChains) {
        var skeleton = fragments
        var collections: [Collection] = []
        for (position, fragment) in fragments.enumerated() where fragment.kind == .change {
            guard let bases = fragment.bases else { continue }
            for key in bases.keys.sorted() {
                guard let base = bases[key], let value = fragment.properties[key], let new = Self.elements(of: value) else { continue }
                let (baseVersion, newVersion) = chains.versions(of: fragment.uuid, key, base: base, new: new)
                collections.append(Collection(fragment: position, key: key, base: baseVersion, new: newVersion))
                skeleton[position].properties[key] = nil
                skeleton[position].bases?[key] = nil
            }
        }
        self.skeleton = skeleton
        self.collections = collections
    }

    /// Fragments kept as `skeleton` and the `collections` taken out of it (the flush makes them so,
    /// without writing the collections as wire values).
    init(skeleton: [SyncFragment], collections: [Collection]) {
        self.skeleton = skeleton
        self.collections = collections
    }

    /// `fragments` kept whole.
    init(whole fragments: [SyncFragment]) {
        skeleton = fragments
        collections = []
    }

    /// The UUIDs of a collection's wire value (an array of UUID strings); nil otherwise. Rebuilt,
    /// they are written in lowercase, as `UUID.wireString` writes them (the same UUIDs).
    private static func elements(of value: JSON) -> [UUID]? {
        value.uuidElements
    }

    /// The fragments as made. O(size of the fragments + the collections' rebuilding, see
    /// ``CollectionVersion/elements``).
    var whole: [SyncFragment] {
        collections.isEmpty ? skeleton : whole(onto: skeleton)
    }

    /// `skeleton` (this change set's ``skeleton`` as it goes out: a root's UUID replaced, shared
    /// values left out) with the collections put back. O(its size + the collections' rebuilding).
    func whole(onto skeleton: [SyncFragment]) -> [SyncFragment] {
        var fragments = skeleton
        for collection in collections where fragments.indices.contains(collection.fragment) {
            // The base first: it is usually the version before the new value, so the new value is
            // then rebuilt from it with one edit.
            var bases = fragments[collection.fragment].bases ?? [:]
            bases[collection.key] = collection.base.elements
            fragments[collection.fragment].bases = bases
            fragments[collection.fragment].properties[collection.key] = Self.wire(collection.new.elements)
        }
        return fragments
    }

    /// `skeleton` (as in ``whole(onto:)``) as it goes to a server that takes collection edits
    /// (§8.24): each collection kept as versions goes as the edit its versions keep (its base named
    /// by count and ``CollectionVersion/digest``), where that is the shorter form; any other as
    /// ``SyncFragment/withCollectionEdits()`` sends it. O(its size + the edits + each base's digest:
    /// O(appended) after an append whose base's digest is known, else O(n)), plus O(n) for a
    /// collection that goes whole.
    func withEdits(onto skeleton: [SyncFragment]) -> [SyncFragment] {
        var fragments = skeleton.map { $0.withCollectionEdits() }
        for collection in collections where fragments.indices.contains(collection.fragment) {
            let base = collection.base
            let new = collection.new
            if var edit = new.edit(from: base), 2 * (edit.removed.count + edit.placements.count) < base.count + new.count {
                edit.baseCount = base.count
                edit.baseDigest = base.digest
                fragments[collection.fragment].collectionEdits = (fragments[collection.fragment].collectionEdits ?? [:])
                    .merging([collection.key: edit]) { _, new in new }
                continue
            }
            var bases = fragments[collection.fragment].bases ?? [:]
            bases[collection.key] = base.elements
            fragments[collection.fragment].bases = bases
            fragments[collection.fragment].properties[collection.key] = Self.wire(new.elements)
            fragments[collection.fragment] = fragments[collection.fragment].withCollectionEdits()
        }
        return fragments
    }

    /// The collection `key` of the fragment at `position`, if it was taken out.
    func collection(at position: Int, _ key: String) -> Collection? {
        collections.first { $0.fragment == position && $0.key == key }
    }

    /// A collection's wire value: its UUID strings.
    static func wire(_ elements: [UUID]) -> JSON {
        .array(elements.map { .string($0.wireString) })
    }
}
