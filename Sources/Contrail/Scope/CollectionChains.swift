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
        /// The version's elements (one array per collection, not per version), or nil when the link
        /// holds its models instead (read as UUIDs only when a change set's base must be compared).
        var elements: [UUID]?
        /// The version's models, for a version made from models: the very array (shared storage)
        /// the property held, so that the next change made on it is known by identity.
        var models: [ModelObject]?

        @MainActor var uuids: [UUID] { elements ?? models?.map(\.uuid) ?? [] }
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
        let previous = last[chain].flatMap { link in link.version.flatMap { link.uuids == base ? $0 : nil } }
            ?? .whole(base, retaining: baseModels)
        let next = previous.next(new, base: base, models: models, baseModels: baseModels, isOnce: isOnce)
        end(chain, at: Link(version: next, elements: new), shared: shared)
        return (previous, next)
    }

    /// The versions of a change `baseModels` → `models` of collection-of-models property `key` of
    /// object `uuid`, made from the models (nil when they are the same). When `baseModels` is the
    /// very array the chain's last version was made from (the property's value it left, compared by
    /// storage: O(1)), the base is that version and no UUID of the collection is read but those of
    /// the models between the common prefix and suffix; otherwise the base is a whole version
    /// (O(n)). One pass of pointer compares finds the prefix and suffix: O(n) compares plus
    /// O(m log m) for the m models between them (see
    /// ``CollectionVersion/next(models:baseModels:prefix:suffix:isOnce:)``). `shared`, `isOnce`: as above.
    mutating func versions(of uuid: UUID, _ key: String, models: [ModelObject], baseModels: [ModelObject], shared: Bool,
                           isOnce: (Int) -> Bool) -> (base: CollectionVersion, new: CollectionVersion)? {
        let (prefix, suffix) = ModelObject.commonEnds(baseModels, models)
        guard prefix < models.count || prefix < baseModels.count else { return nil }
        let chain = Key(uuid: uuid, property: key, ofModels: true)
        let previous = last[chain].flatMap { link in link.version.flatMap { link.models.map { ModelObject.isSameArray($0, baseModels) } ?? false ? $0 : nil } }
            ?? .whole(baseModels.map(\.uuid), retaining: baseModels)
        let next = previous.next(models: models, baseModels: baseModels, prefix: prefix, suffix: suffix, isOnce: isOnce)
        end(chain, at: Link(version: next, models: models), shared: shared)
        return (previous, next)
    }

    /// Makes `link` the last of `chain` (and of the chain of the other kind when `shared`).
    private mutating func end(_ chain: Key, at link: Link, shared: Bool) {
        last[chain] = link
        if shared { last[Key(uuid: chain.uuid, property: chain.property, ofModels: !chain.ofModels)] = link }
        if last.count > pruneThreshold {
            last = last.filter { $0.value.version != nil }
            pruneThreshold = max(64, last.count * 2)
        }
    }
}
