import ContrailWire
import Foundation

/// A chained collection edit of a restored fragment-log record, left for the scope to apply to its
/// typed collection (``Scope/restorePending(_:typed:message:isAtomic:isApplied:id:)``, issue 30):
/// the edit of `baseModels`, which are the log's chain value and the collection's value in the
/// scope alike (the same array). No wire array is made for it. `fallback`: set by the scope when it
/// could not apply the edit to models (it inserts an element that is not a model here), to the
/// whole new value it put into the record's fragment instead.
@MainActor
struct ChainedCollectionEdit {
    /// The position of the record's fragment of the collection's object.
    let position: Int
    /// The collection's object.
    let uuid: UUID
    /// The collection's property.
    let key: String
    /// The edit, of `baseModels`.
    let edit: CollectionEdit
    /// The collection's value before the edit.
    let baseModels: [ModelObject]
    /// The whole new value, when the edit went into the fragment instead.
    var fallback: [UUID]?
}
