import ContrailWire
import Foundation

/// What a schema-agnostic server learns about a (class, property) from the first value it sees:
/// a string naming an object of the scope is a reference, an array of such a collection.
/// Later values of another JSON type are rejected with the original server's messages (§5.2).
enum PropertyKind: String, Sendable, Equatable {
    case string, number, bool, reference, collection, stringArray, numberArray, boolArray
    /// An array seen only empty (or only with nulls) so far: its element kind is still open.
    case array

    /// Whether values of this kind point at other objects (they keep those objects alive).
    var isReference: Bool { self == .reference || self == .collection }

    /// Whether values of this kind must be arrays.
    var isArray: Bool {
        switch self {
        case .collection, .stringArray, .numberArray, .boolArray, .array: return true
        default: return false
        }
    }
}

extension PropertyKind {
    /// Checks `value` for property `key` whose kind is `known` (nil: not seen yet) and infers the
    /// kind when it is open. `exists` says whether a UUID names an object of the scope (or one
    /// added by the same message).
    ///
    /// No poison: a string in UUID form naming no object of the scope or the message is a dangling
    /// reference and rejected, whatever kind the property has or would be inferred as. Otherwise a
    /// first value like `["<unknown uuid>"]` would teach the server that the property holds plain
    /// strings and leave a scope that every typed client's fetch rejects. (The cost: a UUID-typed
    /// value property can only hold UUIDs of objects of the scope.) Returns the §5.2 message on failure.
    static func check(
        _ value: JSON, key: String, known: PropertyKind?, exists: (UUID) -> Bool
    ) -> PropertyCheck {
        switch value {
        case .null:
            if let known, known.isArray {
                return .failure(WireErrorBody(message: "Collection type without array value at '\(key)'"))
            }
            return .success(CheckedValue(value: .null, kind: nil, references: []))
        case .array(let elements):
            return checkArray(elements, key: key, known: known, exists: exists)
        default:
            return checkScalar(value, key: key, known: known, exists: exists)
        }
    }

    private static func checkScalar(
        _ value: JSON, key: String, known: PropertyKind?, exists: (UUID) -> Bool
    ) -> PropertyCheck {
        if let known, known.isArray {
            return .failure(WireErrorBody(message: "Collection type without array value at '\(key)'"))
        }
        switch known {
        case .reference?:
            guard case .string(let text) = value else {
                return .failure(WireErrorBody(message: "Cannot set property at '\(key)' as non-UUID"))
            }
            guard let uuid = UUID(wireString: text), exists(uuid) else {
                return .failure(WireErrorBody(message: "No such ModelObject '\(text.lowercased())' at '\(key)'"))
            }
            return .success(CheckedValue(value: .string(uuid.wireString), kind: nil, references: [uuid]))
        case .string?, .number?, .bool?:
            if let dangling = danglingUUID(value, exists: exists) {
                return .failure(WireErrorBody(message: "No such ModelObject '\(dangling.wireString)' at '\(key)'"))
            }
            let kind = scalarKind(of: value)
            guard kind == known else {
                return .failure(WireErrorBody(message: "Not valid type at '\(key)', should be \(known.map(\.typeName) ?? "")"))
            }
            return .success(CheckedValue(value: value, kind: nil, references: []))
        default:
            // Not seen yet: a string naming an object is a reference.
            if case .string(let text) = value, let uuid = UUID(wireString: text) {
                if exists(uuid) {
                    return .success(CheckedValue(value: .string(uuid.wireString), kind: .reference, references: [uuid]))
                }
                return .failure(WireErrorBody(message: "No such ModelObject '\(uuid.wireString)' at '\(key)'"))
            }
            return .success(CheckedValue(value: value, kind: scalarKind(of: value), references: []))
        }
    }

    private static func checkArray(
        _ elements: [JSON], key: String, known: PropertyKind?, exists: (UUID) -> Bool
    ) -> PropertyCheck {
        switch known {
        case .collection?:
            return checkCollection(elements, key: key, exists: exists)
        case .stringArray?, .numberArray?, .boolArray?:
            let dangling = elements.compactMap { danglingUUID($0, exists: exists) }
            if !dangling.isEmpty {
                let list = dangling.map { "'\($0.wireString)'" }.joined(separator: ", ")
                return .failure(WireErrorBody(message: "No such ModelObjects [\(list)] at '\(key)'"))
            }
            // A null element is a hole (NaN, or nil in an optional element): it fits every kind.
            for element in elements where !element.isNull && arrayKind(ofElement: element) != known {
                return .failure(WireErrorBody(message: "Not valid type at '\(key)', should be array of \(known.map(\.typeName) ?? "")"))
            }
            return .success(CheckedValue(value: .array(elements), kind: nil, references: []))
        case .string?, .number?, .bool?, .reference?:
            if known == .reference {
                return .failure(WireErrorBody(message: "Cannot set property at '\(key)' as non-UUID"))
            }
            return .failure(WireErrorBody(message: "Not valid type at '\(key)', should be \(known.map(\.typeName) ?? "")"))
        case .array?, nil:
            // Open: infer from the elements (all arrays are flat and of one type, §3).
            guard let first = elements.first(where: { !$0.isNull }) else {
                return .success(CheckedValue(value: .array(elements), kind: known == nil ? .array : nil, references: []))
            }
            if case .string = first, elements.contains(where: { element in
                if case .string(let text) = element { return UUID(wireString: text) != nil }
                return false
            }) {
                var checked = checkCollection(elements, key: key, exists: exists)
                if case .success(var value) = checked { value.kind = PropertyKind.collection; checked = .success(value) }
                return checked
            }
            let kind = arrayKind(ofElement: first)
            // One kind besides the null holes (the fragment check says so too; checked here again
            // so the inferred kind never depends on that).
            for element in elements where !element.isNull && arrayKind(ofElement: element) != kind {
                return .failure(WireErrorBody(message: "Not valid type at '\(key)', should be array of \(kind.typeName)"))
            }
            return .success(CheckedValue(value: .array(elements), kind: kind, references: []))
        }
    }

    private static func checkCollection(
        _ elements: [JSON], key: String, exists: (UUID) -> Bool
    ) -> PropertyCheck {
        var uuids: [UUID] = []
        uuids.reserveCapacity(elements.count)
        var missing: [String] = []
        for element in elements {
            guard case .string(let text) = element, let uuid = UUID(wireString: text) else {
                return .failure(WireErrorBody(message: "Not valid type at '\(key)', should be array of UUIDs"))
            }
            if !exists(uuid) { missing.append(uuid.wireString) }
            uuids.append(uuid)
        }
        if !missing.isEmpty {
            let list = missing.map { "'\($0)'" }.joined(separator: ", ")
            return .failure(WireErrorBody(message: "No such ModelObjects [\(list)] at '\(key)'"))
        }
        return .success(CheckedValue(value: .array(uuids.map { .string($0.wireString) }), kind: nil, references: uuids))
    }

    /// The UUID a string value names when it is in UUID form and names no object.
    private static func danglingUUID(_ value: JSON, exists: (UUID) -> Bool) -> UUID? {
        guard case .string(let text) = value, let uuid = UUID(wireString: text), !exists(uuid) else { return nil }
        return uuid
    }

    private static func scalarKind(of value: JSON) -> PropertyKind {
        switch value {
        case .bool: return .bool
        case .string: return .string
        default: return .number
        }
    }

    private static func arrayKind(ofElement value: JSON) -> PropertyKind {
        switch value {
        case .bool: return .boolArray
        case .string: return .stringArray
        case .null: return .array  // a hole: callers skip nulls
        default: return .numberArray
        }
    }

    /// The type name used in "Not valid type" messages.
    var typeName: String {
        switch self {
        case .string, .stringArray: return "String"
        case .number, .numberArray: return "Number"
        case .bool, .boolArray: return "Boolean"
        case .reference, .collection, .array: return "UUID"
        }
    }
}
