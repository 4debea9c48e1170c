import Foundation

/// One object in a live query's order: its first sort key as a plain number, all its keys when the
/// order needs more (as they were when it was placed), its uuid (which breaks ties, so the order is
/// total and the same on every replica) and the object.
///
/// An entry of a query sorted by one number is plain bytes: moving, copying and comparing entries
/// in the query's tree touches no reference count and no object, which is what keeps a change at a
/// few cache lines per level of the tree instead of a cache miss on every object a search passes.
struct QueryEntry {
    /// The first sort key encoded in the query's direction (`QueryKeyComponent.encoded`): entries
    /// whose keys are inline order as these numbers do; 0 when the key is compared from `keys`.
    var key: UInt64
    /// The uuid's bytes as two big-endian numbers: compared, they order as the uuid strings do.
    var high: UInt64
    var low: UInt64
    /// The object (of the query's class: a query downcasts it). Not retained by the entry: the
    /// hub's row of the object (`QueryRow`) holds every object in a tree, and comparisons never
    /// read it (the copies a tree keeps as separators may outlive the object, and are only compared).
    unowned(unsafe) let object: ModelObject
    /// Every sort key, for a query whose order needs more than `key` (a first key that is not a
    /// number, or further keys); nil otherwise.
    let keys: QueryKeys?
    /// 0 or 1: whether the first key is null, in the query's direction (compared before `key`).
    var tag: UInt8

    /// The entry of `row`'s object with first key `first` (encoded as `isInline` and `descending` say).
    init(first: QueryKeyComponent, isInline: Bool, descending: Bool, keys: QueryKeys?, row: QueryRow) {
        let (tag, key) = first.encoded(isInline: isInline, descending: descending)
        self.init(key: key, tag: tag, keys: keys, row: row)
    }

    /// The entry of `row`'s object with an encoded first key (what a query keeps of an entry).
    init(key: UInt64, tag: UInt8, keys: QueryKeys?, row: QueryRow) {
        self.key = key
        self.tag = tag
        self.keys = keys
        high = row.high
        low = row.low
        object = row.object
    }

    /// The entry's tree prefix (`OrderStatisticTree.prefix`): the tag and the encoded first key
    /// without its lowest bit, which orders as `order` does where it differs.
    static func prefix(_ entry: QueryEntry) -> UInt64 {
        entry.key >> 1 | UInt64(entry.tag) << 63
    }

    /// The strict total order of entries under `descending` (one flag per sort key, the first
    /// key's first) when the first key `isInline`: the encoded first key, then the other keys (from
    /// `keys`), then the uuid.
    static func order(descending: [Bool], firstIsInline: Bool) -> (QueryEntry, QueryEntry) -> Bool {
        guard !firstIsInline || descending.count > 1 else {
            return { a, b in
                if a.tag != b.tag { return a.tag < b.tag }
                if a.key != b.key { return a.key < b.key }
                return a.high != b.high ? a.high < b.high : a.low < b.low
            }
        }
        let from = firstIsInline ? 1 : 0
        return { a, b in
            if a.tag != b.tag { return a.tag < b.tag }
            if a.key != b.key { return a.key < b.key }
            if let x = a.keys?.components, let y = b.keys?.components {
                for index in from..<descending.count {
                    let c = x[index].compare(y[index])
                    if c != 0 { return descending[index] ? c > 0 : c < 0 }
                }
            }
            return a.high != b.high ? a.high < b.high : a.low < b.low
        }
    }
}
