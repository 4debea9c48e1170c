import Foundation

/// The fragment a scope is building for one object during the current flush.
@MainActor
struct PendingFragment {
    let object: ModelObject
    /// `add` when the object joined the scope in this flush.
    let kind: SyncFragment.Kind
    /// Touched properties in order of first touch, with the value each had before.
    var touched: [Int] = []
    var originals: [Int: Any] = [:]
    /// Collection contents before the first touch, for the server's three-way merge (§8.4).
    var bases: [Int: [UUID]] = [:]
}
