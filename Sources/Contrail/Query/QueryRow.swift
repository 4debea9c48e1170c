import Foundation

/// One object the live queries of a hub share (`QueryHub.row(for:)`): the number that indexes
/// every query's state of the object (`QueryCore`'s slots), the object (held: the queries' trees
/// do not retain theirs) and its uuid as an entry compares it. A change resolves its object's row
/// once, and each query reaches its state from the number, without a lookup of its own.
struct QueryRow {
    /// The row's position in the hub's table, and in each query's slots.
    let index: Int
    let object: ModelObject
    /// The uuid's bytes as two big-endian numbers (`QueryEntry.high`, `QueryEntry.low`).
    let high: UInt64
    let low: UInt64

    @MainActor
    init(index: Int, object: ModelObject) {
        self.index = index
        self.object = object
        (high, low) = withUnsafeBytes(of: object.uuid.uuid) { bytes in
            (UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
             UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}
