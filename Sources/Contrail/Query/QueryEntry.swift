import Foundation

/// One object in a live query's order: its sort keys as they were when it was placed, its uuid
/// (which breaks ties, so the order is total and the same on every replica) and the object.
struct QueryEntry {
    /// The first sort key (`null` for a query without sort criteria).
    var first: QueryKeyComponent
    /// The further sort keys, if any (empty: no allocation).
    var rest: [QueryKeyComponent]
    /// The uuid's bytes as two big-endian numbers: compared, they order as the uuid strings do.
    var high: UInt64
    var low: UInt64
    /// The object (of the query's class: a query downcasts it). Not generic, so that the order's
    /// code is specialised once, in this module, instead of copying entries through value witnesses.
    let object: ModelObject

    init(first: QueryKeyComponent, rest: [QueryKeyComponent], uuid: UUID, object: ModelObject) {
        self.first = first
        self.rest = rest
        (high, low) = withUnsafeBytes(of: uuid.uuid) { bytes in
            (UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
             UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        self.object = object
    }

    /// The strict total order of entries under `descending` (one flag per sort key, the first
    /// key's first): keys in turn, then the uuid.
    static func order(descending: [Bool]) -> (QueryEntry, QueryEntry) -> Bool {
        let firstDescending = descending.first ?? false
        let restDescending = Array(descending.dropFirst())
        return { a, b in
            var c = a.first.compare(b.first)
            if c != 0 { return firstDescending ? c > 0 : c < 0 }
            for index in restDescending.indices {
                c = a.rest[index].compare(b.rest[index])
                if c != 0 { return restDescending[index] ? c > 0 : c < 0 }
            }
            return a.high != b.high ? a.high < b.high : a.low < b.low
        }
    }
}
