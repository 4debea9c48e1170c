import ContrailWire
import Foundation

/// The objects of a ``ScopeStore``, by UUID, held without a heap allocation per object: the
/// objects of one ``ObjectShape`` (class and property names) are rows of one ``Slab``, whose
/// values lie in one flat array, row after row, and an index maps each UUID to its shape and row.
/// An object of three integers costs its row (three ``StoredValue``s and its UUID, 88 bytes) and
/// its index entry (a UUID and 8 bytes, in a table at most 75 % full). Shared texts (§8.21), which
/// few objects have, are kept beside the rows.
///
/// Reading an object through the subscript builds a ``StoredObject`` (O(properties)); the loops
/// that visit every object (collection, the state's order) read rows in place
/// (``forEachProperty(of:_:)``). Iterates by shape, then row: no order is promised.
struct ObjectTable: Sendable, Sequence, Equatable {
    /// Where an object is: its shape's number and its row in that shape's slab.
    private struct Place: Sendable, Equatable {
        var shape: UInt32
        var row: UInt32
    }

    /// The objects of one shape: their UUIDs and, row after row, their values in the order of
    /// the shape's keys.
    private struct Slab: Sendable {
        let shape: ObjectShape
        var uuids: ContiguousArray<UUID> = []
        var values: ContiguousArray<StoredValue> = []
        /// The number of values per row.
        var width: Int { shape.keys.count }
    }

    private var index: [UUID: Place] = [:]
    private var slabs: [Slab] = []
    /// Each shape's number in ``slabs``, so that objects of one shape share one instance of it.
    private var numbers: [ObjectShape: UInt32] = [:]
    /// Property name → `TextDocument` state, of the objects that have shared texts.
    private var texts: [UUID: [String: JSON]] = [:]

    /// An empty table.
    init() {}

    /// The number of objects.
    var count: Int { index.count }

    /// The number of shapes some object has.
    var shapeCount: Int { slabs.reduce(0) { $0 + ($1.uuids.isEmpty ? 0 : 1) } }

    /// Whether the table holds `uuid`. O(1), builds nothing.
    func contains(_ uuid: UUID) -> Bool { index[uuid] != nil }

    /// The class name of `uuid`, or nil. O(1).
    func className(of uuid: UUID) -> String? {
        index[uuid].map { slabs[Int($0.shape)].shape.className }
    }

    /// The object `uuid`, or nil; setting nil removes it. O(properties).
    subscript(uuid: UUID) -> StoredObject? {
        get { index[uuid].map { object(at: $0, uuid: uuid) } }
        set {
            if let newValue { set(newValue, for: uuid) } else { remove(uuid) }
        }
    }

    /// The shape the table holds equal to `shape` (its shared instance), or `shape`. O(names).
    func canonical(_ shape: ObjectShape) -> ObjectShape {
        numbers[shape].map { slabs[Int($0)].shape } ?? shape
    }

    /// Calls `body` with each property of `uuid` in name order, read in place; false if the table
    /// does not hold `uuid`. O(properties).
    @discardableResult
    func forEachProperty(of uuid: UUID, _ body: (_ className: String, _ key: String, _ value: StoredValue) -> Void) -> Bool {
        guard let place = index[uuid] else { return false }
        let slab = slabs[Int(place.shape)]
        let start = Int(place.row) * slab.width
        for (offset, key) in slab.shape.keys.enumerated() { body(slab.shape.className, key, slab.values[start + offset]) }
        return true
    }

    /// The properties of `uuid` as a dictionary, or nil. O(properties).
    func properties(of uuid: UUID) -> [String: JSON]? {
        guard let place = index[uuid] else { return nil }
        let slab = slabs[Int(place.shape)]
        let start = Int(place.row) * slab.width
        var result: [String: JSON] = [:]
        result.reserveCapacity(slab.width)
        for (offset, key) in slab.shape.keys.enumerated() { result[key] = slab.values[start + offset].json }
        return result
    }

    /// The shared text states of `uuid` (empty for most objects). O(1).
    func texts(of uuid: UUID) -> [String: JSON] { texts[uuid] ?? [:] }

    /// Makes room for `count` objects in the index. O(count).
    mutating func reserveCapacity(_ count: Int) { index.reserveCapacity(count) }

    /// Gives back the rows' spare capacity (after a load: an array grown by appending has up to
    /// as much again). O(objects), copies each slab once.
    mutating func shrinkToFit() {
        for number in slabs.indices {
            slabs[number].uuids = Self.exact(slabs[number].uuids)
            slabs[number].values = Self.exact(slabs[number].values)
        }
    }

    /// `array` in a buffer of its count.
    private static func exact<Element>(_ array: ContiguousArray<Element>) -> ContiguousArray<Element> {
        guard array.capacity > array.count else { return array }
        var copy = ContiguousArray<Element>()
        copy.reserveCapacity(array.count)
        copy.append(contentsOf: array)
        return copy
    }

    /// Holds `object` as `uuid`, in place when it keeps its shape. O(properties), amortised.
    mutating func set(_ object: StoredObject, for uuid: UUID) {
        var current = index[uuid]
        // A change of values keeps the very shape instance of the object's slab: no hash of it.
        let number = current.flatMap { slabs[Int($0.shape)].shape === object.shape ? $0.shape : nil } ?? number(of: object.shape)
        if let place = current, place.shape != number {
            remove(uuid)
            current = nil
        }
        if let place = current {
            let start = Int(place.row) * slabs[Int(number)].width
            slabs[Int(number)].values.replaceSubrange(start..<start + object.values.count, with: object.values)
        } else {
            let row = slabs[Int(number)].uuids.count
            precondition(row < Int(UInt32.max), "a shape holds fewer than 2^32 objects")
            slabs[Int(number)].uuids.append(uuid)
            slabs[Int(number)].values.append(contentsOf: object.values)
            index[uuid] = Place(shape: number, row: UInt32(row))
        }
        if object.texts.isEmpty {
            if !texts.isEmpty { texts[uuid] = nil }
        } else {
            texts[uuid] = object.texts
        }
    }

    /// Removes `uuid` (its slab's last row takes its place). O(properties).
    mutating func remove(_ uuid: UUID) {
        guard let place = index.removeValue(forKey: uuid) else { return }
        if !texts.isEmpty { texts[uuid] = nil }
        let number = Int(place.shape)
        let width = slabs[number].width
        let last = slabs[number].uuids.count - 1
        let row = Int(place.row)
        if row != last {
            let moved = slabs[number].uuids[last]
            slabs[number].uuids[row] = moved
            for offset in 0..<width { slabs[number].values[row * width + offset] = slabs[number].values[last * width + offset] }
            index[moved] = place
        }
        slabs[number].uuids.removeLast()
        slabs[number].values.removeLast(width)
        if slabs[number].uuids.isEmpty {
            slabs[number].uuids = []
            slabs[number].values = []
        }
    }

    /// Removes every object `keep` is false for and returns them. O(objects).
    mutating func removeAll(keeping keep: (UUID) -> Bool) -> [(UUID, StoredObject)] {
        let uuids = slabs.flatMap { $0.uuids.filter { !keep($0) } }
        var gone: [(UUID, StoredObject)] = []
        gone.reserveCapacity(uuids.count)
        for uuid in uuids {
            guard let object = self[uuid] else { continue }
            gone.append((uuid, object))
            remove(uuid)
        }
        // Shapes no object has any more: dropped once they are most of the table's.
        let empty = slabs.count - shapeCount
        if empty > 64, empty * 2 > slabs.count { dropEmptySlabs() }
        return gone
    }

    /// Every UUID, by shape then row.
    var keys: some Sequence<UUID> { slabs.lazy.flatMap(\.uuids) }

    /// Every object, by shape then row.
    var values: some Sequence<StoredObject> { lazy.map { $0.value } }

    /// Every (UUID, object), by shape then row; each object built as it is reached.
    func makeIterator() -> Iterator { Iterator(table: self) }

    /// Iterates a table's objects.
    struct Iterator: IteratorProtocol {
        fileprivate let table: ObjectTable
        private var shape = 0
        private var row = 0

        fileprivate init(table: ObjectTable) { self.table = table }

        /// The next (UUID, object), or nil.
        mutating func next() -> (key: UUID, value: StoredObject)? {
            while shape < table.slabs.count {
                let slab = table.slabs[shape]
                if row < slab.uuids.count {
                    let uuid = slab.uuids[row]
                    let place = Place(shape: UInt32(shape), row: UInt32(row))
                    row += 1
                    return (uuid, table.object(at: place, uuid: uuid))
                }
                shape += 1
                row = 0
            }
            return nil
        }
    }

    /// Whether both hold the same objects under the same UUIDs, in any rows. O(objects).
    static func == (lhs: ObjectTable, rhs: ObjectTable) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy { uuid, object in rhs[uuid] == object }
    }

    /// The number of `shape`'s slab, made when the table has none.
    private mutating func number(of shape: ObjectShape) -> UInt32 {
        if let number = numbers[shape] { return number }
        precondition(slabs.count < Int(UInt32.max), "fewer than 2^32 shapes")
        let number = UInt32(slabs.count)
        slabs.append(Slab(shape: shape))
        numbers[shape] = number
        return number
    }

    private func object(at place: Place, uuid: UUID) -> StoredObject {
        let slab = slabs[Int(place.shape)]
        let start = Int(place.row) * slab.width
        return StoredObject(shape: slab.shape, values: ContiguousArray(slab.values[start..<start + slab.width]), texts: texts[uuid] ?? [:])
    }

    /// Renumbers the shapes some object has. O(objects).
    private mutating func dropEmptySlabs() {
        slabs.removeAll { $0.uuids.isEmpty }
        numbers = [:]
        for (number, slab) in slabs.enumerated() {
            numbers[slab.shape] = UInt32(number)
            for (row, uuid) in slab.uuids.enumerated() { index[uuid] = Place(shape: UInt32(number), row: UInt32(row)) }
        }
    }
}
