import Foundation

/// The collections of a fragment log's pending change sets as edits (Protocol §8.24): each pending
/// record holds a collection as an edit of its base rather than as two whole arrays, and a restore
/// turns the edits back into arrays. `values` is the new value of each collection the pending
/// records met so far wrote, in record order; the writer keeps one such chain (from the last
/// attach or compaction on) and the reader another (from the start of the file), and they agree on
/// every collection the writer's chain holds.
///
/// A collection whose base is the chain's value is written as a *chained edit*: an entry of the
/// record's `"chain"` member, without the base's length and digest, and out of its fragment (a
/// fragment left with nothing else is not written at all: the entry brings it back). An entry is
/// `[position, uuid, className, key, place, remove?]`: the fragment's position in the record, its
/// object and class, the collection, then the edit's placements (`[element, anchor, 1?]`, 1 for a
/// move) and removals, each UUID written as its string or, shorter, as a reference: `i ≥ 0` is the
/// object of the record's fragment `i`, `-k` the k-th element of the base from its end (so an
/// append of an object the record adds is `[[0,-1]]`). Other collections go as edits with their
/// base's length and digest (a live record) or whole with their base (a compacted tail, whose bases
/// the snapshot before it does not hold).
@MainActor
struct CollectionEditChain {
    private struct Key: Hashable {
        let uuid: UUID
        let property: String
    }

    /// How a collection whose base is not the chain's value is written.
    enum Unchained {
        /// As an edit of its base (named by length and digest): a live record, whose bases a reader holds.
        case edit
        /// Whole, with its base: a compaction's tail.
        case whole
    }

    /// A chained entry that cannot be read back (a damaged or hand-made record).
    struct ChainError: Error {
        let reason: String
    }

    /// The value of each collection: as an array (what a restore and a whole record give), as
    /// the version a pending change set keeps (``CompactFragments``; the writer, record by record),
    /// or as the models the scope's collection holds (a restore that applies chained edits to the
    /// typed collection, ``ChainedCollectionEdit``: the very array, compared by storage).
    private enum Value {
        case elements([UUID])
        case version(CollectionVersion)
        case models([ModelObject])

        @MainActor var elements: [UUID] {
            switch self {
            case .elements(let elements): elements
            case .version(let version): version.elements
            case .models(let models): models.map { $0.uuid }
            }
        }
    }

    private var values: [Key: Value] = [:]
    /// The collections `resolving` moved on to a whole array, which ``adopt(typed:models:)`` may
    /// hold as the scope's models once the record is applied.
    private var moved: [Key] = []

    /// How many elements from a base's end a reference may name.
    private static let referenceReach = 8

    // MARK: Writing

    /// `fragments` as a pending record writes them, and the record's chained entries: each
    /// collection whose base is the chain's value leaves its fragment for an entry, the others go as
    /// `unchained` says. The chain moves on to every collection's new value. O(collection sizes).
    mutating func chaining(_ fragments: [SyncFragment], unchained: Unchained) -> (fragments: [SyncFragment], chained: [JSON]) {
        chaining(CompactFragments(whole: fragments), unchained: unchained)
    }

    /// `stored` (a pending change set's fragments as it keeps them) as a pending record writes
    /// them, as the fragments' form above. A collection kept as versions
    /// whose base is the version the chain holds is written from the edit the versions keep: O(size
    /// of the edit), with no whole array, digest or string of the collection's other elements; one
    /// that is not is rebuilt whole first (the first record after an attach or a compaction).
    /// O(size of the fragments + edits), plus O(n) per collection rebuilt or kept whole.
    mutating func chaining(_ stored: CompactFragments, unchained: Unchained) -> (fragments: [SyncFragment], chained: [JSON]) {
        let fragments = stored.skeleton
        var positions: [UUID: Int] = [:]
        var written: [SyncFragment] = []
        written.reserveCapacity(fragments.count)
        var chained: [JSON] = []
        for (position, fragment) in fragments.enumerated() {
            let kept = stored.collections.isEmpty ? [] : stored.collections.filter { $0.fragment == position }
            guard fragment.kind == .change, fragment.bases != nil || !kept.isEmpty else {
                written.append(fragment)
                continue
            }
            if positions.isEmpty {
                for (index, fragment) in fragments.enumerated() { positions[fragment.uuid] = index }
            }
            var rest = fragment
            var isChained = false
            var rebuilt: [Key: CollectionVersion] = [:]
            for collection in kept.sorted(by: { $0.key < $1.key }) {
                let key = Key(uuid: fragment.uuid, property: collection.key)
                if case .version(let last)? = values[key], last === collection.base, let edit = collection.new.edit(from: collection.base),
                   2 * (edit.removed.count + edit.placements.count) < collection.base.count + collection.new.count {
                    chained.append(Self.entry(position: position, fragment: fragment, key: collection.key, edit: edit,
                                              baseTail: collection.base.last.map { [$0] } ?? [], positions: positions))
                    values[key] = .version(collection.new)
                    isChained = true
                    continue
                }
                rebuilt[key] = collection.new
                // Not on the chain: whole, for the arrays' path below (it moves the chain on).
                var bases = rest.bases ?? [:]
                bases[collection.key] = collection.base.elements
                rest.bases = bases
                rest.properties[collection.key] = CompactFragments.wire(collection.new.elements)
            }
            for key in (rest.bases ?? [:]).keys.sorted() {
                guard let base = rest.bases?[key], let new = rest.properties[key]?.uuidElements else { continue }
                let collection = Key(uuid: fragment.uuid, property: key)
                let chainValue = values[collection]
                defer { values[collection] = .elements(new) }
                guard chainValue?.elements == base, let edit = CollectionEdit(base: base, new: new),
                      2 * (edit.removed.count + edit.placements.count) < base.count + new.count
                else { continue }
                chained.append(Self.entry(position: position, fragment: fragment, key: key, edit: edit, baseTail: base.suffix(Self.referenceReach),
                                          positions: positions))
                rest.properties[key] = nil
                rest.bases?[key] = nil
                isChained = true
            }
            // The chain holds the versions, so that the next record's edit follows on from them.
            for (key, version) in rebuilt { values[key] = .version(version) }
            if rest.bases?.isEmpty == true { rest.bases = nil }
            if unchained == .edit { rest = rest.withCollectionEdits() }
            if isChained, rest.properties.isEmpty, rest.bases == nil, rest.textOperations == nil, rest.counterDeltas == nil,
               rest.collectionEdits == nil {
                continue  // the entry brings the fragment back
            }
            written.append(rest)
        }
        return (written, chained)
    }

    /// A chained entry: `baseTail` is the base's last elements (up to ``referenceReach``).
    private static func entry(position: Int, fragment: SyncFragment, key: String, edit: CollectionEdit,
                              baseTail: some RandomAccessCollection<UUID>, positions: [UUID: Int]) -> JSON {
        func reference(_ uuid: UUID) -> JSON {
            if let index = positions[uuid] { return .int(Int64(index)) }
            for (back, element) in baseTail.reversed().enumerated() where element == uuid { return .int(-Int64(back + 1)) }
            return .string(uuid.wireString)
        }
        let place = edit.placements.map { placement in
            var parts = [reference(placement.element), placement.anchor.map(reference) ?? .null]
            if placement.isMove { parts.append(.int(1)) }
            return JSON.array(parts)
        }
        var parts: [JSON] = [.int(Int64(position)), .string(fragment.uuid.wireString), .string(fragment.className), .string(key), .array(place)]
        if !edit.removed.isEmpty { parts.append(.array(edit.removed.map(reference))) }
        return .array(parts)
    }

    // MARK: Reading

    /// `fragments` (a pending record being restored) with its `chained` entries back in place and
    /// every collection edit turned back into an array and its base: a chained entry's base is the
    /// chain's value; an edit's the chain's value or `current(uuid, key)` (the scope's value),
    /// whichever it names, and when neither (a remote record for the collection came between) it
    /// is applied to the scope's value (``CollectionEdit/appliedLoosely(to:)``). The chain moves on
    /// to every collection's new value. Throws for an entry it cannot read. O(collection sizes).
    mutating func resolving(_ fragments: [SyncFragment], chained: [JSON] = [], current: (UUID, String) -> [UUID]?)
        throws(ChainError) -> [SyncFragment]
    {
        try resolving(fragments, chained: chained, current: current, typed: nil).fragments
    }

    /// As above; with `typed` (a live record the scope applies itself), each chained entry whose
    /// base the chain holds as the models the scope's collection holds now (`typed(uuid, key)`,
    /// the same array) is not turned into an array: it is returned as a ``ChainedCollectionEdit`` and its
    /// fragment carries no value for the collection. O(edit) for such an entry (no whole array,
    /// no string but the edit's); the rest as above. The chain moves on for such an entry in
    /// ``adopt(typed:models:)``, once the scope applied it.
    mutating func resolving(_ fragments: [SyncFragment], chained: [JSON], current: (UUID, String) -> [UUID]?,
                            typed: ((UUID, String) -> [ModelObject]?)?) throws(ChainError) -> (fragments: [SyncFragment], typed: [ChainedCollectionEdit])
    {
        var fragments = fragments
        var restored: [Key: [UUID]] = [:]
        var typedEdits: [ChainedCollectionEdit] = []
        if !chained.isEmpty { (restored, typedEdits) = try restore(chained, into: &fragments, typed: typed) }
        let resolved = fragments.map { fragment in
            var resolved = fragment
            if let edits = fragment.collectionEdits {
                resolved.collectionEdits = nil
                for key in edits.keys.sorted() {
                    guard let edit = edits[key] else { continue }
                    let now = current(fragment.uuid, key) ?? []
                    let base = [values[Key(uuid: fragment.uuid, property: key)]?.elements, now].compactMap { $0 }.first(where: edit.isBase)
                    let new = base.flatMap(edit.applied(to:)) ?? edit.appliedLoosely(to: now)
                    resolved.properties[key] = .array(new.map { .string($0.wireString) })
                    resolved.bases = (resolved.bases ?? [:]).merging([key: base ?? now]) { _, new in new }
                }
            }
            for key in (resolved.bases ?? [:]).keys {
                let collection = Key(uuid: fragment.uuid, property: key)
                if let new = restored[collection] ?? resolved.properties[key]?.uuidElements {
                    values[collection] = .elements(new)
                    if typed != nil { moved.append(collection) }
                }
            }
            return resolved
        }
        return (resolved, typedEdits)
    }

    /// Once the scope applied a record `resolving` gave `typed` edits for: each typed edit's
    /// collection moves on to the models the scope's collection holds now (`models(uuid, key)`), or
    /// to its `fallback` elements; each other collection the record moved on to an array is held
    /// as the scope's models from now on when they are that array (so the next chained edit of it
    /// is typed). O(1) per typed edit; O(n) per other collection.
    mutating func adopt(typed: [ChainedCollectionEdit], models: (UUID, String) -> [ModelObject]?) {
        for edit in typed {
            let key = Key(uuid: edit.uuid, property: edit.key)
            if let fallback = edit.fallback {
                values[key] = .elements(fallback)
            } else if let held = models(edit.uuid, edit.key) {
                values[key] = .models(held)
            }
        }
        for key in moved {
            guard case .elements(let elements)? = values[key], let held = models(key.uuid, key.property),
                  held.count == elements.count, held.lazy.map(\.uuid).elementsEqual(elements) else { continue }
            values[key] = .models(held)
        }
        moved.removeAll()
    }

    /// Puts each chained entry's collection (its new value and base) into its fragment, bringing
    /// back the fragments the record left out, and returns the new values (the chain itself moves
    /// on in `resolving`, without reading them back from the strings). The base is the chain's
    /// value, so the edit is applied to it without a digest: O(p) for an append (plus the copy of
    /// the base), O(n) otherwise, and O(n) to write the value's strings.
    private func restore(_ chained: [JSON], into fragments: inout [SyncFragment], typed: ((UUID, String) -> [ModelObject]?)?)
        throws(ChainError) -> ([Key: [UUID]], [ChainedCollectionEdit])
    {
        var restored: [Key: [UUID]] = [:]
        var typedEdits: [ChainedCollectionEdit] = []
        var entries: [Entry] = []
        entries.reserveCapacity(chained.count)
        // First every fragment in place (references name final positions), then the values.
        for json in chained {
            guard case .array(let parts) = json, parts.count == 5 || parts.count == 6,
                  let position = parts[0].int64Value.map(Int.init), position >= 0, position <= fragments.count,
                  case .string(let uuidText) = parts[1], let uuid = UUID(wireString: uuidText),
                  case .string(let className) = parts[2], case .string(let key) = parts[3],
                  case .array(let place) = parts[4]
            else { throw ChainError(reason: "invalid chained edit") }
            var remove: [JSON] = []
            if parts.count == 6 {
                guard case .array(let removed) = parts[5] else { throw ChainError(reason: "invalid chained removals") }
                remove = removed
            }
            if position == fragments.count || fragments[position].uuid != uuid {
                fragments.insert(SyncFragment(kind: .change, uuid: uuid, className: className), at: position)
            } else if fragments[position].kind != .change || fragments[position].properties[key] != nil {
                throw ChainError(reason: "chained edit of '\(key)' beside its value")
            }
            entries.append(Entry(position: position, key: key, place: place, remove: remove))
        }
        for entry in entries {
            let uuid = fragments[entry.position].uuid
            let key = Key(uuid: uuid, property: entry.key)
            if case .models(let models)? = values[key], let typed, let held = typed(uuid, entry.key), ModelObject.isSameArray(held, models) {
                // Applied by the scope to its typed collection: references name the models' UUIDs.
                let edit = try Self.edit(of: entry, baseCount: models.count, fragments: fragments) { models[models.count + $0].uuid }
                typedEdits.append(ChainedCollectionEdit(position: entry.position, uuid: uuid, key: entry.key, edit: edit, baseModels: models))
                continue
            }
            guard let base = values[key]?.elements else {
                throw ChainError(reason: "chained edit of '\(entry.key)' without an earlier value")
            }
            let edit = try Self.edit(of: entry, baseCount: base.count, fragments: fragments) { base[base.count + $0] }
            var new = base
            edit.apply(to: &new)
            fragments[entry.position].properties[entry.key] = .array(new.map { .string($0.wireString) })
            fragments[entry.position].bases = (fragments[entry.position].bases ?? [:]).merging([entry.key: base]) { _, new in new }
            restored[key] = new
        }
        return (restored, typedEdits)
    }

    /// A chained entry as read: its fragment's position, its collection, its placements and removals.
    private struct Entry {
        let position: Int
        let key: String
        let place: [JSON]
        let remove: [JSON]
    }

    /// The edit `entry` says, of a base of `baseCount` elements whose element `back` places from its
    /// end (`back` < 0) is `fromEnd(back)`. O(size of the entry).
    private static func edit(of entry: Entry, baseCount: Int, fragments: [SyncFragment], fromEnd: (Int) -> UUID) throws(ChainError)
        -> CollectionEdit
    {
        func element(_ json: JSON) throws(ChainError) -> UUID {
            switch json {
            case .string(let text):
                if let uuid = UUID(wireString: text) { return uuid }
            case .int(let index) where index >= 0 && index < fragments.count:
                return fragments[Int(index)].uuid
            case .int(let back) where back < 0 && back >= -Int64(baseCount):
                return fromEnd(Int(back))
            default:
                break
            }
            throw ChainError(reason: "invalid reference in a chained edit of '\(entry.key)'")
        }
        var placements: [CollectionEdit.Placement] = []
        placements.reserveCapacity(entry.place.count)
        for json in entry.place {
            guard case .array(let parts) = json, parts.count == 2 || (parts.count == 3 && parts[2] == .int(1)) else {
                throw ChainError(reason: "invalid placement in a chained edit of '\(entry.key)'")
            }
            let anchor: UUID? = parts[1] == .null ? nil : try element(parts[1])
            placements.append(CollectionEdit.Placement(element: try element(parts[0]), anchor: anchor, isMove: parts.count == 3))
        }
        var removed: [UUID] = []
        removed.reserveCapacity(entry.remove.count)
        for json in entry.remove { removed.append(try element(json)) }
        return CollectionEdit(baseCount: baseCount, baseDigest: 0, removed: removed, placements: placements)
    }
}
