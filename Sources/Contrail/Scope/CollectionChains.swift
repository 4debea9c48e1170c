import Foundation

/// The last version (``CollectionVersion``) a local change set left of each collection, held weakly,
/// so that the next change set made on that value keeps its collection as an edit of it (issue 30).
/// A version is matched by count and digest (``CollectionVersion/isValue(_:)``): a remote value
/// applied in between, or a revert, starts a new chain with a whole version.
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
    }

    private var last: [Key: Link] = [:]
    private var pruneThreshold = 64

    /// The versions of a collection change `base` → `new` of property `key` of object `uuid`: the
    /// base is the chain's last version when that is `base`, else a whole version; the new one
    /// follows it (and becomes the chain's last). O(b + n).
    /// For a collection of models, `models` and `baseModels` are the values' models (the versions
    /// hold them alive; a chain of models is apart from the chain of wire values).
    mutating func versions(of uuid: UUID, _ key: String, base: [UUID], new: [UUID], models: [ModelObject]? = nil,
                           baseModels: [ModelObject] = []) -> (base: CollectionVersion, new: CollectionVersion) {
        let chain = Key(uuid: uuid, property: key, ofModels: models != nil)
        let previous = last[chain]?.version.flatMap { $0.isValue(base) ? $0 : nil } ?? .whole(base, retaining: baseModels)
        let next = previous.next(new, base: base, models: models, baseModels: baseModels)
        last[chain] = Link(version: next)
        if last.count > pruneThreshold {
            last = last.filter { $0.value.version != nil }
            pruneThreshold = max(64, last.count * 2)
        }
        return (previous, next)
    }
}
