import ContrailWire

/// One object of a server-side scope: its class name and its properties as wire values.
/// The server knows no schema; a property's meaning comes from its values (see ``PropertyKind``).
///
/// The class name and the sorted property names are an ``ObjectShape`` shared with the scope's
/// other objects of that class and names, with one ``StoredValue`` per name, in the same order.
/// This is the form an object is read, changed and kept in (a change set's working copies, deleted
/// objects); the store keeps its live objects as rows of an ``ObjectTable``, without an array each.
/// ``properties`` builds the dictionary view; the subscript and ``forEachProperty(_:)`` read
/// without building one.
struct StoredObject: Sendable, Equatable {
    /// The class name and property names.
    private(set) var shape: ObjectShape
    /// The values, in the order of `shape.keys`.
    private(set) var values: ContiguousArray<StoredValue>
    /// Property name → the `TextDocument` state of a shared text (§8.21); its plain text is in
    /// `properties`.
    var texts: [String: JSON] = [:]

    /// An object of `className` with `properties`. O(n log n).
    init(className: String, properties: [String: JSON], texts: [String: JSON] = [:]) {
        let keys = properties.keys.sorted()
        self.shape = ObjectShape(className: className, keys: keys)
        var values = ContiguousArray<StoredValue>()
        values.reserveCapacity(keys.count)
        for key in keys { values.append(StoredValue(properties[key] ?? .null)) }
        self.values = values
        self.texts = texts
    }

    /// An object of `shape` with `values` in the order of its keys (as many).
    init(shape: ObjectShape, values: ContiguousArray<StoredValue>, texts: [String: JSON] = [:]) {
        assert(shape.keys.count == values.count, "one value per key")
        self.shape = shape
        self.values = values
        self.texts = texts
    }

    /// The bare class name; empty for a root nobody has named yet.
    var className: String {
        get { shape.className }
        set { if newValue != shape.className { shape = ObjectShape(className: newValue, keys: shape.keys) } }
    }

    /// The number of properties.
    var propertyCount: Int { values.count }

    /// Property name → wire value, as a dictionary. O(n) to read or write: prefer the subscript.
    var properties: [String: JSON] {
        get {
            var result: [String: JSON] = [:]
            result.reserveCapacity(values.count)
            for (key, value) in zip(shape.keys, values) { result[key] = value.json }
            return result
        }
        set { self = StoredObject(className: className, properties: newValue, texts: texts) }
    }

    /// The value of property `key`, or nil; setting nil removes it. O(log n) to read or replace,
    /// O(n) to add or remove a name.
    subscript(key: String) -> JSON? {
        get { stored(key)?.json }
        set { setStored(newValue.map(StoredValue.init), for: key) }
    }

    /// The compact value of property `key`, or nil. O(log n).
    func stored(_ key: String) -> StoredValue? {
        shape.index(of: key).map { values[$0] }
    }

    /// Sets (or with nil removes) the compact value of property `key`. O(log n) to replace, O(n) to
    /// add or remove a name.
    mutating func setStored(_ value: StoredValue?, for key: String) {
        let index = shape.insertionIndex(of: key)
        let present = index < shape.keys.count && shape.keys[index] == key
        switch (value, present) {
        case (let value?, true): values[index] = value
        case (let value?, false):
            shape = shape.inserting(key, at: index)
            values.insert(value, at: index)
        case (nil, true):
            shape = shape.removing(at: index)
            values.remove(at: index)
        case (nil, false): break
        }
    }

    /// Calls `body` with each property in name order. O(n).
    func forEachProperty(_ body: (String, StoredValue) throws -> Void) rethrows {
        for (key, value) in zip(shape.keys, values) { try body(key, value) }
    }

    /// Uses `canonical` as the shape (the store's interned instance equal to ``shape``). O(1).
    mutating func adopt(_ canonical: ObjectShape) {
        assert(canonical == shape, "a shape is replaced only by an equal one")
        shape = canonical
    }
}
