import ContrailWire
import Foundation

/// One property value of a ``StoredObject``, held compactly: numbers and booleans inline, a UUID
/// (a reference) as its 16 bytes, an array of UUIDs (a collection) as `[UUID]`, a string as a
/// `String` (inline up to 15 UTF-8 bytes), and any other value (nested arrays and objects) kept
/// verbatim as its ``JSON``. ``json`` gives back exactly the value it was made from: a string
/// becomes a UUID only when it is one in the wire's lowercase form.
enum StoredValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits `Int64`.
    case int(Int64)
    /// An integer above `Int64.max` that fits `UInt64`.
    case uint(UInt64)
    /// Any other number.
    case double(Double)
    /// A string in the wire's lowercase UUID form.
    case uuid(UUID)
    /// Any other string.
    case string(String)
    /// An array whose every element is a string in the wire's lowercase UUID form (also `[]`).
    case uuids([UUID])
    /// Any other value (an array or object), boxed so the rare case keeps the common ones small.
    case other(Opaque)

    /// A value the server keeps as it came (an array or object that is not a collection).
    final class Opaque: Sendable, Hashable {
        /// The value.
        let json: JSON
        init(_ json: JSON) { self.json = json }
        static func == (lhs: Opaque, rhs: Opaque) -> Bool { lhs === rhs || lhs.json == rhs.json }
        func hash(into hasher: inout Hasher) { hasher.combine(json) }
    }

    /// The compact form of `json`. O(size of the value).
    init(_ json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .int(let value): self = .int(value)
        case .uint(let value): self = .uint(value)
        case .double(let value): self = .double(value)
        case .string(let text): self = Self.canonicalUUID(text).map(StoredValue.uuid) ?? .string(text)
        case .array(let elements):
            var uuids: [UUID] = []
            uuids.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let text) = element, let uuid = Self.canonicalUUID(text) else {
                    self = .other(Opaque(json))
                    return
                }
                uuids.append(uuid)
            }
            self = .uuids(uuids)
        case .object: self = .other(Opaque(json))
        }
    }

    /// The wire value. O(size of the value).
    var json: JSON {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .int(let value): .int(value)
        case .uint(let value): .uint(value)
        case .double(let value): .double(value)
        case .uuid(let uuid): .string(uuid.wireString)
        case .string(let text): .string(text)
        case .uuids(let uuids): .array(uuids.map { .string($0.wireString) })
        case .other(let box): box.json
        }
    }

    /// The UUIDs a reference or collection value names (as ``ScopeStore`` reads them: a string or
    /// each string element that parses as a UUID, in either case). O(n).
    var referencedUUIDs: [UUID] {
        switch self {
        case .uuid(let uuid): [uuid]
        case .uuids(let uuids): uuids
        case .string(let text): UUID(wireString: text).map { [$0] } ?? []
        case .other(let box):
            if case .array(let elements) = box.json {
                elements.compactMap { $0.stringValue.flatMap(UUID.init(wireString:)) }
            } else {
                []
            }
        default: []
        }
    }

    /// `text` as a UUID when it is one in the lowercase wire form (so that ``json`` spells it back
    /// exactly), else nil.
    private static func canonicalUUID(_ text: String) -> UUID? {
        guard text.utf8.count == 36, let uuid = UUID(wireString: text) else { return nil }
        // The wire form is lowercase: a value with an upper-case digit stays a string.
        return text.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") }) ? nil : uuid
    }
}
