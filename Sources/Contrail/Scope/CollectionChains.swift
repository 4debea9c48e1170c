import Foundation

/// The last version (``CollectionVersion``) a local change set left of each collection, held weakly,
/// so that the next change set made on that value keeps its collection as an edit of it (issue 30).
/// The chain keeps the last value's elements beside it: a version is matched by comparing them
/// with the next change set's base (UUIDs, no digest, no strings; an O(1) identity check when the
/// arrays share storage). A remote value applied in between, or a revert, starts a new chain with
/// a whole version.
@MainActor
struct CollectionChains {
    private struct Key: Hashable {
        let uuid: UUID
        let property: String
        /// A chain of a change set's model values (``ChangeSet/Change``) rather than of its fragments'.
        let ofModels: Bool
    }

    private struct Link {
        weak var version: CollectionVersion?
        /// The version's elements (one array per collection, not per version).
        var elements: [UUID]
    }

    private var last: [Key: Link] = [:]
    private var pruneThreshold = 64

    /// The versions of a collection change `base` → `new` of property `key` of object `uuid`: the
    /// base is the chain's last version when that is `base`, else a whole version; the new one
    /// follows it (and becomes the chain's last). O(b + n) comparisons of UUIDs, see
    /// ``CollectionVersion/next(_:base:models:baseModels:isOnce:)``.
    /// For a collection of models, `models` and `baseModels` are the values' models (the versions
    /// hold them alive; a chain of models is apart from the chain of wire values unless `shared`:
    /// then the new version ends both, as the flush keeps one pair of versions for a change set's
    /// fragment and its change). `isOnce(i)`: whether `new[i]` is there once.
    mutating func versions(of uuid: UUID, _ key: String, base: [UUID], new: [UUID], models: [ModelObject]? = nil,
                           baseModels: [ModelObject] = [], shared: Bool = false, isOnce: ((Int) -> Bool)? = nil)
        -> (base: CollectionVersion, new: CollectionVersion) {
        let chain = Key(uuid: uuid, property: key, ofModels: models != nil)
        let previous = last[chain].flatMap { link in link.version.flatMap { link.elements == base ? $0 : nil } }
            ?? .whole(base, retaining: baseModels)
        let next = previous.next(new, base: base, models: models, baseModels: baseModels, isOnce: isOnce)
        last[chain] = Link(version: next, elements: new)
        if shared { last[Key(uuid: uuid, property: key, ofModels: !chain.ofModels)] = Link(version: next, elements: new) }
        if last.count > pruneThreshold {
            last = last.filter { $0.value.version != nil }
            pruneThreshold = max(64, last.count * 2)
        }
        return (previous, next)
    }
}
