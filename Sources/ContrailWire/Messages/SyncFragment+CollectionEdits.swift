import Foundation

/// Converting a fragment's collections between the two forms of §8.4 and §8.24: a whole array with
/// its base, and an edit of the base (``CollectionEdit``).
extension SyncFragment {
    /// The extension name a server lists in `SessionCreateReply.extensions` when it takes
    /// `collectionOps` (§8.24).
    public static let collectionOpsExtension = "collectionOps"
    /// The `SessionCreate` parameter (`true`) by which a Contrail client asks for broadcasts with
    /// collections as edits (§8.24); an original server hands it to its session hook, which ignores it.
    public static let collectionOpsParameter = "contrailCollectionOps"

    /// This fragment with each collection that has a base (and no element twice) sent as an edit of
    /// that base, where the edit is the shorter form. O(b + n) per collection.
    public func withCollectionEdits() -> SyncFragment {
        guard kind == .change, let bases, !bases.isEmpty else { return self }
        var copy = self
        for (key, base) in bases {
            guard let new = properties[key]?.uuidElements, let edit = CollectionEdit(base: base, new: new),
                  2 * (edit.removed.count + edit.placements.count) < base.count + new.count
            else { continue }
            copy.properties[key] = nil
            copy.bases?[key] = nil
            copy.collectionEdits = (copy.collectionEdits ?? [:]).merging([key: edit]) { _, new in new }
        }
        if copy.bases?.isEmpty == true { copy.bases = nil }
        return copy
    }

    /// This fragment with every collection edit turned back into a whole array with its base (the
    /// form of §8.4): `base(key, edit)` finds the edit's base (nil: not held), and the result is nil
    /// when one is not found. O(b + n) per collection.
    public func resolvingCollectionEdits(base: (String, CollectionEdit) -> [UUID]?) -> SyncFragment? {
        guard let collectionEdits else { return self }
        var copy = self
        copy.collectionEdits = nil
        for key in collectionEdits.keys.sorted() {
            guard let edit = collectionEdits[key], let base = base(key, edit), let new = edit.applied(to: base) else { return nil }
            copy.properties[key] = .array(new.map { .string($0.wireString) })
            copy.bases = (copy.bases ?? [:]).merging([key: base]) { _, new in new }
        }
        return copy
    }

    /// This fragment with every collection edit turned into the whole value it gives, without bases
    /// (a value that replaces the collection, as in a broadcast or a log record): `base(key, edit)`
    /// finds the edit's base; nil when one is not found or the edit does not fit it. O(b + n) per
    /// collection.
    public func replacingCollectionEdits(base: (String, CollectionEdit) -> [UUID]?) -> SyncFragment? {
        guard let collectionEdits else { return self }
        guard var resolved = resolvingCollectionEdits(base: base) else { return nil }
        for key in collectionEdits.keys { resolved.bases?[key] = nil }
        if resolved.bases?.isEmpty == true { resolved.bases = nil }
        return resolved
    }
}

extension JSON {
    /// The elements of an array of UUID strings (a collection's wire value); nil for any other
    /// value, or an array with another element. O(n).
    package var uuidElements: [UUID]? {
        guard case .array(let elements) = self else { return nil }
        var result: [UUID] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element, let uuid = UUID(wireString: text) else { return nil }
            result.append(uuid)
        }
        return result
    }
}
