import Foundation

/// What changed in a live query's contents in one delivery, as a `UITableView` or
/// `UICollectionView` batch update takes it: delete `removed` (indices in the old contents), insert
/// `inserted` (indices in the new contents), move each of `moved` (from an old index to a new one),
/// and reload `updated` (old indices of rows that stayed in place but whose object changed).
///
/// ```swift
/// query.onChanges(self) { changes in
///     tableView.performBatchUpdates {
///         tableView.deleteRows(at: changes.removed.map { IndexPath(row: $0, section: 0) }, with: .automatic)
///         tableView.insertRows(at: changes.inserted.map { IndexPath(row: $0, section: 0) }, with: .automatic)
///         for move in changes.moved {
///             tableView.moveRow(at: IndexPath(row: move.from, section: 0), to: IndexPath(row: move.to, section: 0))
///         }
///         tableView.reloadRows(at: changes.updated.map { IndexPath(row: $0, section: 0) }, with: .none)
///     }
/// }
/// ```
/// A moved object may have changed in other ways too: reconfigure its row at `to` after the batch.
/// Rows not named keep their object and shift as the removals and insertions imply.
public struct QueryChanges: Equatable, Sendable, CustomStringConvertible {
    /// Indices in the old contents of the objects that left them.
    public var removed: IndexSet
    /// Indices in the new contents of the objects that joined them.
    public var inserted: IndexSet
    /// Objects that stayed but changed their place relative to the others, from old to new index.
    public var moved: [QueryMove]
    /// Indices in the old contents of objects that stayed in place and changed.
    public var updated: IndexSet
    /// The number of elements before (what `removed`, `moved.from` and `updated` index).
    public var oldCount: Int
    /// The number of elements after (what `inserted` and `moved.to` index).
    public var newCount: Int

    /// Changes that turn `oldCount` elements into `newCount` ones.
    public init(removed: IndexSet = [], inserted: IndexSet = [], moved: [QueryMove] = [], updated: IndexSet = [],
                oldCount: Int, newCount: Int) {
        self.removed = removed
        self.inserted = inserted
        self.moved = moved
        self.updated = updated
        self.oldCount = oldCount
        self.newCount = newCount
    }

    /// Changes that replace everything: every old index removed, every new one inserted (what a
    /// consumer that fell behind by more than one delivery receives).
    public static func replacingAll(oldCount: Int, newCount: Int) -> QueryChanges {
        QueryChanges(removed: IndexSet(integersIn: 0..<oldCount), inserted: IndexSet(integersIn: 0..<newCount),
                     oldCount: oldCount, newCount: newCount)
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { removed.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty }

    /// Whether objects joined, left or moved (not only updates in place).
    public var changesOrder: Bool { !removed.isEmpty || !inserted.isEmpty || !moved.isEmpty }

    /// The changes in words, for logs and test failures.
    public var description: String {
        func list(_ set: IndexSet) -> String { "[" + set.map(String.init).joined(separator: ",") + "]" }
        let moves = moved.map { "\($0.from)→\($0.to)" }.joined(separator: ",")
        return "QueryChanges(\(oldCount)→\(newCount) removed \(list(removed)) inserted \(list(inserted)) "
            + "moved [\(moves)] updated \(list(updated)))"
    }
}
