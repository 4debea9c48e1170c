import Foundation
import Synchronization

/// One value of a collection (its elements' UUIDs) as a pending change set keeps it (issue 30):
/// whole, or as an edit (``CollectionEdit``) of the version before it. A change set that appends
/// to a long collection made on the value the previous one left keeps one small edit, not the
/// whole array, so n pending change sets cost O(n), not O(n²).
///
/// Versions form segments: each starts at a whole version (its *head*) followed by edits. A new
/// version is whole again once the segment's edits would outweigh the collection (so the heads
/// cost no more than the edits do: memory stays linear); it still remembers the edit from the
/// version before it (``edit(from:)``), so the log and the wire can carry that edit. ``elements``
/// rebuilds a value by applying the edits from the head, starting instead from the last value
/// rebuilt in the segment when it is on the way (the head remembers it), so walking a chain
/// forward, as sending and rebasing do, costs one edit per version. Nothing here formats or parses
/// a UUID string, and the ``digest`` is computed only when an edit goes on the wire (from the
/// version before for an append). Immutable but for the memos and the link to the version before (taken only by `deinit`), which a `Mutex` guards.
final class CollectionVersion: Sendable {
    private enum Form {
        case whole([UUID])
        /// An edit of the version before it (``parent``).
        case edit(CollectionEdit)
    }

    /// A whole version's edit from the version before it, which it does not hold alive.
    private struct Step {
        weak var from: CollectionVersion?
        let edit: CollectionEdit
    }

    /// What a version learns when read: the last value rebuilt in its segment (kept by a head,
    /// weakly: the memo must not keep its version alive) and its own digest.
    private struct Memo {
        weak var version: CollectionVersion?
        var elements: [UUID] = []
        var digest: UInt64?
    }

    private let form: Form
    /// The version an edit applies to (nil for a whole version). Under a lock only so that `deinit`
    /// can take it and release a long chain one version at a time.
    private let parentCell: Mutex<CollectionVersion?>
    private let step: Step?
    /// The number of elements.
    let count: Int
    /// The last element (what a log record's reference `-1` names, and what an append anchors on).
    let last: UUID?
    /// Whether no element is there twice: only then are versions kept as edits (``CollectionEdit``
    /// needs it), and only then can the next version's duplicate check look at what changed.
    let isDuplicateFree: Bool
    /// Operations (removals and placements) of the edits since the head; 0 for a head.
    private let depth: Int
    private let memo = Mutex(Memo())
    /// The models this version holds alive, for a collection of models (a change set's values,
    /// which a revert or an undo brings back): a head's elements, an edit's inserted and removed
    /// ones, so that every element of a version is held by it or a version before it.
    private let retained: [ModelObject]

    private init(form: Form, parent: CollectionVersion? = nil, step: Step? = nil, count: Int, last: UUID?, isDuplicateFree: Bool, depth: Int,
                 retained: [ModelObject]) {
        self.form = form
        parentCell = Mutex(parent)
        self.step = step
        self.count = count
        self.last = last
        self.isDuplicateFree = isDuplicateFree
        self.depth = depth
        self.retained = retained
    }

    /// A whole version of `elements` (holding `models` alive). O(n).
    static func whole(_ elements: [UUID], retaining models: [ModelObject] = []) -> CollectionVersion {
        CollectionVersion(form: .whole(elements), count: elements.count, last: elements.last,
                          isDuplicateFree: CollectionEdit.isDuplicateFree(elements), depth: 0, retained: models)
    }

    /// The models held alive by this version and the versions before it in its segment, by UUID:
    /// every element of this version among them. O(n + edits from the head).
    @MainActor var models: [UUID: ModelObject] {
        var byUUID: [UUID: ModelObject] = [:]
        var cursor = self
        while true {
            for model in cursor.retained where byUUID[model.uuid] == nil { byUUID[model.uuid] = model }
            guard let parent = cursor.parent else { return byUUID }
            cursor = parent
        }
    }

    /// The version after this one whose elements are `new`, given that this one's are `base`: an
    /// edit of this version, or whole when either holds an element twice or the segment's edits
    /// would outweigh the collection. Whether `new` holds an element twice is decided from what
    /// changed: `isOnce(i)` tells whether `new[i]` is there once (for a collection of models, its
    /// links to the collection); without it, or when this version is not duplicate-free, `new` is
    /// checked whole. O(b + n) comparisons of UUIDs (common prefix and suffix) plus O(m log m) for
    /// the m elements between them, and O(n) hashing when checked whole.
    /// For a collection of models, `models` are the new value's and `baseModels` the base's (the
    /// version holds the ones between the common prefix and suffix).
    @MainActor
    func next(_ new: [UUID], base: [UUID], models: [ModelObject]? = nil, baseModels: [ModelObject] = [],
              isOnce: ((Int) -> Bool)? = nil) -> CollectionVersion {
        let (prefix, suffix) = CollectionEdit.trim(base: base, new: new)
        let newMiddle = prefix..<(new.count - suffix)
        // With a base that holds each element once, only an element between prefix and suffix can
        // be in the new value twice.
        let isFree = if isDuplicateFree, let isOnce { newMiddle.allSatisfy(isOnce) } else { CollectionEdit.isDuplicateFree(new) }
        guard isDuplicateFree, isFree else {
            return CollectionVersion(form: .whole(new), count: new.count, last: new.last, isDuplicateFree: isFree, depth: 0,
                                     retained: models ?? [])
        }
        let baseMiddle = prefix..<(base.count - suffix)
        let edit = CollectionEdit(baseCount: base.count, anchor: prefix > 0 ? new[prefix - 1] : nil, baseMiddle: Array(base[baseMiddle]),
                                  newMiddle: Array(new[newMiddle]), baseDigest: 0)
        var retained: [ModelObject] = []
        if let models, models.count == new.count, baseModels.count == base.count {
            retained.reserveCapacity(newMiddle.count + baseMiddle.count)
            retained += models[newMiddle]
            retained += baseModels[baseMiddle]
        } else if let models {
            let touched = Set(edit.removed + edit.placements.map(\.element))
            retained = (models + baseModels).filter { touched.contains($0.uuid) }
        }
        return following(edit, count: new.count, last: new.last, retained: retained, models: models ?? []) { new }
    }

    /// The version after this one of a collection of models whose models are `models`, given that
    /// this one's are `baseModels` and that the two share a common prefix of `prefix` models and a
    /// common suffix of `suffix` (``ModelObject/commonEnds(_:_:)``): made from the models between
    /// them alone, without reading the UUIDs of the others. `isOnce(i)` tells whether `models[i]`
    /// is there once. O(m log m) for the m models between prefix and suffix; O(n) when the version
    /// is whole (it holds an element twice, or a new segment starts: once per segment, whose edits
    /// add up to the collection's size).
    @MainActor
    func next(models: [ModelObject], baseModels: [ModelObject], prefix: Int, suffix: Int, isOnce: (Int) -> Bool) -> CollectionVersion {
        let newMiddle = prefix..<(models.count - suffix)
        let baseMiddle = prefix..<(baseModels.count - suffix)
        guard isDuplicateFree, newMiddle.allSatisfy(isOnce) else {
            let new = models.map(\.uuid)
            return CollectionVersion(form: .whole(new), count: new.count, last: new.last,
                                     isDuplicateFree: isDuplicateFree ? false : CollectionEdit.isDuplicateFree(new), depth: 0, retained: models)
        }
        let edit = CollectionEdit(baseCount: baseModels.count, anchor: prefix > 0 ? models[prefix - 1].uuid : nil,
                                  baseMiddle: baseModels[baseMiddle].map(\.uuid), newMiddle: models[newMiddle].map(\.uuid), baseDigest: 0)
        var retained: [ModelObject] = []
        retained.reserveCapacity(newMiddle.count + baseMiddle.count)
        retained += models[newMiddle]
        retained += baseModels[baseMiddle]
        return following(edit, count: models.count, last: models.last?.uuid, retained: retained, models: models) { models.map(\.uuid) }
    }

    /// The version `edit` makes of this one (duplicate-free), of `count` elements ending with `last`:
    /// an edit holding `retained`, or whole (`elements()`, holding `models`) once the segment's
    /// edits would outweigh the collection.
    private func following(_ edit: CollectionEdit, count: Int, last: UUID?, retained: [ModelObject], models: [ModelObject],
                           elements: () -> [UUID]) -> CollectionVersion {
        let depth = depth + edit.removed.count + edit.placements.count
        guard depth <= max(count, 32) else {
            return CollectionVersion(form: .whole(elements()), step: Step(from: self, edit: edit), count: count, last: last,
                                     isDuplicateFree: true, depth: 0, retained: models)
        }
        return CollectionVersion(form: .edit(edit), parent: self, count: count, last: last, isDuplicateFree: true, depth: depth,
                                 retained: retained)
    }

    /// The version an edit applies to; nil for a whole version.
    private var parent: CollectionVersion? { parentCell.withLock { $0 } }

    /// A segment is a chain of up to n edits, each holding the one before: released here one
    /// version at a time, as each one's last reference goes, instead of recursively (a chain of
    /// 50,000 offline appends overflowed the stack). O(versions released).
    deinit {
        var next = parentCell.withLock { parent in
            defer { parent = nil }
            return parent
        }
        while var version = next {
            next = nil
            guard isKnownUniquelyReferenced(&version) else { break }
            next = version.parentCell.withLock { parent in
                defer { parent = nil }
                return parent
            }
        }
    }

    /// The edit that turns `base` into this version, when this version was made as the one after
    /// it; nil otherwise. Its ``CollectionEdit/baseDigest`` is not set (see ``digest``). O(1).
    func edit(from base: CollectionVersion) -> CollectionEdit? {
        if case .edit(let edit) = form, parent === base { return edit }
        if let step, step.from === base { return step.edit }
        return nil
    }

    /// The head of this version's segment.
    private var head: CollectionVersion {
        var cursor = self
        while let parent = cursor.parent { cursor = parent }
        return cursor
    }

    /// The elements. O(n × edits from the head), or O(n) for the version after the last one rebuilt
    /// in the segment (or that one itself).
    var elements: [UUID] {
        let head = head
        guard case .whole(let whole) = head.form else { return [] }
        if self === head { return whole }
        let (remembered, rememberedElements) = head.memo.withLock { ($0.version, $0.elements) }
        var path: [CollectionEdit] = []
        var start = whole
        var cursor = self
        while case .edit(let edit) = cursor.form, let parent = cursor.parent {
            if cursor === remembered {
                start = rememberedElements
                break
            }
            path.append(edit)
            cursor = parent
        }
        guard !path.isEmpty else { return start }
        var value = start
        for edit in path.reversed() {
            edit.apply(to: &value)
        }
        head.memo.withLock { memo in
            memo.version = self
            memo.elements = value
        }
        return value
    }

    /// ``CollectionEdit/digest(of:)`` of the elements, computed once when first asked (a version
    /// whose edit goes on the wire as the base of the next). A run of appends continues the digest
    /// of the version before it (FNV-1a runs element by element): O(appended); anything else
    /// O(n) from the rebuilt elements.
    var digest: UInt64 {
        if let known = memo.withLock({ $0.digest }) { return known }
        // Back over appends to a version whose digest is known or can only be computed whole.
        var appends: [(CollectionVersion, CollectionEdit)] = []
        var cursor = self
        var start: UInt64?
        while start == nil {
            if let known = cursor.memo.withLock({ $0.digest }) {
                start = known
            } else if case .edit(let edit) = cursor.form, let parent = cursor.parent, edit.isAppend(after: parent.last) {
                appends.append((cursor, edit))
                cursor = parent
            } else {
                let computed = CollectionEdit.digest(of: cursor.elements)
                cursor.memo.withLock { $0.digest = computed }
                start = computed
            }
        }
        var hash = start ?? 0
        for (version, edit) in appends.reversed() {
            hash = CollectionEdit.digest(of: edit.placements.map(\.element), continuing: hash)
            version.memo.withLock { $0.digest = hash }
        }
        return hash
    }
}
