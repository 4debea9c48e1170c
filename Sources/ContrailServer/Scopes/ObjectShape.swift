import ContrailSupport

/// What objects of one class with the same property names share: the class name and the names,
/// sorted. A ``ScopeStore``'s ``ObjectTable`` holds one instance per (class, names), with a row per
/// object, so an object pays for its names once per shape, not once per object. Immutable.
final class ObjectShape: Sendable, Hashable {
    /// The bare class name; empty for a root nobody has named yet.
    let className: String
    /// The property names, sorted.
    let keys: [String]

    /// The shape of no properties, for `className`.
    init(className: String, keys: [String] = []) {
        self.className = className
        self.keys = keys
    }

    /// The position of `key` in ``keys``, or nil. O(log n).
    func index(of key: String) -> Int? {
        let index = insertionIndex(of: key)
        return index < keys.count && keys[index] == key ? index : nil
    }

    /// Where `key` goes in ``keys`` to keep them sorted. O(log n).
    func insertionIndex(of key: String) -> Int {
        keys.partitioningIndex { $0 >= key }
    }

    /// This shape with `key` inserted at `index` (from ``insertionIndex(of:)``). O(n).
    func inserting(_ key: String, at index: Int) -> ObjectShape {
        var keys = keys
        keys.insert(key, at: index)
        return ObjectShape(className: className, keys: keys)
    }

    /// This shape without the key at `index`. O(n).
    func removing(at index: Int) -> ObjectShape {
        var keys = keys
        keys.remove(at: index)
        return ObjectShape(className: className, keys: keys)
    }

    static func == (lhs: ObjectShape, rhs: ObjectShape) -> Bool {
        lhs === rhs || (lhs.className == rhs.className && lhs.keys == rhs.keys)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(className)
        hasher.combine(keys)
    }
}
