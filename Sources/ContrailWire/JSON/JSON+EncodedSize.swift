extension JSON {
    /// An upper bound of the value's serialized length in bytes (every character of a string
    /// counted as a 6-byte escape, every number as 32 bytes), without serializing it, so that a
    /// size check costs a walk instead of an encoding. O(values).
    package var encodedSizeUpperBound: Int {
        switch self {
        case .null, .bool: return 5
        case .int, .uint, .double: return 32
        case .string(let text): return 2 + 6 * text.utf8.count
        case .array(let elements): return elements.reduce(2) { $0 + 1 + $1.encodedSizeUpperBound }
        case .object(let members):
            return members.reduce(2) { $0 + 4 + 6 * $1.key.utf8.count + $1.value.encodedSizeUpperBound }
        }
    }
}

extension SyncFragment {
    /// An upper bound of the fragment's serialized length in bytes (see ``JSON/encodedSizeUpperBound``).
    package var encodedSizeUpperBound: Int {
        var size = 160 + 6 * className.utf8.count
        for (key, value) in properties { size += 4 + 6 * key.utf8.count + value.encodedSizeUpperBound }
        for (key, base) in bases ?? [:] { size += 6 + 6 * key.utf8.count + 39 * base.count }
        return size
    }
}
