import Foundation
import Synchronization

/// One value of a collection (its elements' UUIDs) as a pending change set keeps it (issue 30):
/// whole, or as an edit (``CollectionEdit``) of the version before it. A change set that appends
/// to a long collection made on the value the previous one left keeps one small edit, not the
/// whole array, so n pending change sets cost O(n), not O(n²).
///
/// Versions form segments: each starts at a whole version (its *head*) followed by edits. A new
/// version is whole again once the segment's edits would outweigh the collection (so the heads
/// cost no more than the edits do: memory stays linear). ``elements`` rebuilds a value by applying
/// the edits from the head, starting instead from the last value rebuilt in the segment when it is
/// on the way (the head remembers it), so walking a chain forward, as sending and rebasing do,
/// costs one edit per version. Immutable but for that memo, which a `Mutex` guards.
final class CollectionVersion: Sendable {
    private enum Form {
        case whole([UUID])
        case edit(parent: CollectionVersion, CollectionEdit)
    }

    /// The last value rebuilt in a segment (weakly: the memo must not keep its version alive).
    private struct Memo {
        weak var version: CollectionVersion?
        var elements: [UUID] = []
    }

    private let form: Form
    /// The number of elements.
    let count: Int
    /// ``CollectionEdit/digest(of:)`` of the elements.
    let digest: UInt64
    /// Operations (removals and placements) of the edits since the head; 0 for a head.
    private let depth: Int
    /// The last value rebuilt in the segment (used in a head only).
    private let memo = Mutex(Memo())
    /// The models this version holds alive, for a collection of models (a change set's values,
    /// which a revert or an undo brings back): a head's elements, an edit's inserted and removed
    /// ones, so that every element of a version is held by it or a version before it.
    private let retained: [ModelObject]

    private init(form: Form, count: Int, digest: UInt64, depth: Int, retained: [ModelObject]) {
        self.form = form
        self.count = count
        self.digest = digest
        self.depth = depth
        self.retained = retained
    }

    /// A whole version of `elements` (holding `models` alive). O(n).
    static func whole(_ elements: [UUID], retaining models: [ModelObject] = []) -> CollectionVersion {
        CollectionVersion(form: .whole(elements), count: elements.count, digest: CollectionEdit.digest(of: elements), depth: 0,
                          retained: models)
    }

    /// The models held alive by this version and the versions before it in its segment, by UUID:
    /// every element of this version among them. O(n + edits from the head).
    @MainActor var models: [UUID: ModelObject] {
        var byUUID: [UUID: ModelObject] = [:]
        var cursor = self
        while true {
            for model in cursor.retained where byUUID[model.uuid] == nil { byUUID[model.uuid] = model }
            guard case .edit(let parent, _) = cursor.form else { return byUUID }
            cursor = parent
        }
    }

    /// Whether this version's elements are `elements`, by count and digest. O(n).
    func isValue(_ elements: [UUID]) -> Bool {
        elements.count == count && CollectionEdit.digest(of: elements) == digest
    }

    /// The version after this one whose elements are `new`, given that this one's are `base`: an
    /// edit of this version, or whole when there is no edit (an element twice) or the segment's
    /// edits would outweigh the collection. O(b + n).
    /// For a collection of models, `models` are the new value's and `baseModels` the base's (the
    /// version holds the ones the edit inserts or removes).
    @MainActor
    func next(_ new: [UUID], base: [UUID], models: [ModelObject]? = nil, baseModels: [ModelObject] = []) -> CollectionVersion {
        guard let edit = CollectionEdit(base: base, new: new) else { return .whole(new, retaining: models ?? []) }
        let depth = depth + edit.removed.count + edit.placements.count
        guard depth <= max(new.count, 32) else { return .whole(new, retaining: models ?? []) }
        var retained: [ModelObject] = []
        if let models {
            let touched = Set(edit.removed + edit.placements.map(\.element))
            retained = (models + baseModels).filter { touched.contains($0.uuid) }
        }
        return CollectionVersion(form: .edit(parent: self, edit), count: new.count, digest: CollectionEdit.digest(of: new), depth: depth,
                                 retained: retained)
    }

    /// The head of this version's segment.
    private var head: CollectionVersion {
        var cursor = self
        while case .edit(let parent, _) = cursor.form { cursor = parent }
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
        while case .edit(let parent, let edit) = cursor.form {
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
}
