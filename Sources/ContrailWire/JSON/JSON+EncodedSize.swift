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

extension JSON {
    /// A lower bound of the value's serialized length in bytes (strings without escapes, numbers as
    /// one digit), without serializing it. O(values).
    package var encodedSizeLowerBound: Int {
        switch self {
        case .null, .bool: return 4
        case .int, .uint, .double: return 1
        case .string(let text): return 2 + text.utf8.count
        case .array(let elements): return elements.reduce(2) { $0 + 1 + $1.encodedSizeLowerBound } - (elements.isEmpty ? 0 : 1)
        case .object(let members):
            return members.reduce(2) { $0 + 4 + $1.key.utf8.count + $1.value.encodedSizeLowerBound } - (members.isEmpty ? 0 : 1)
        }
    }
}

extension SyncFragment {
    /// An upper bound of the fragment's serialized length in bytes (see ``JSON/encodedSizeUpperBound``).
    package var encodedSizeUpperBound: Int {
        var size = 160 + 6 * className.utf8.count
        for (key, value) in properties { size += 4 + 6 * key.utf8.count + value.encodedSizeUpperBound }
        for (key, base) in bases ?? [:] { size += 6 + 6 * key.utf8.count + 39 * base.count }
        for (key, edit) in collectionEdits ?? [:] {
            size += 64 + 6 * key.utf8.count + 39 * edit.removed.count + 84 * edit.placements.count
        }
        return size
    }

    /// A lower bound of the fragment's serialized length in bytes: its property values' (see
    /// ``JSON/encodedSizeLowerBound``) and its UUID's.
    package var encodedSizeLowerBound: Int {
        properties.reduce(38) { $0 + $1.key.utf8.count + $1.value.encodedSizeLowerBound }
    }
}
