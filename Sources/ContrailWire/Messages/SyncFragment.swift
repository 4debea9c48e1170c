import Foundation

/// The wire form of one sync fragment: the delta for one object (Protocol §3).
///
/// ```json
/// {"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"Shape",
///  "properties":{"x":10,"y":20,"color":500346879}}
/// ```
public struct SyncFragment: Sendable, Hashable, Codable {
    /// Whether the fragment creates an object or changes an existing one (`"type"` on the wire).
    public enum Kind: String, Sendable, Hashable, Codable {
        /// Creates the object (`"add"`).
        case add
        /// Changes an existing object (`"change"`).
        case change
    }

    /// `add` or `change` (`"type"` on the wire).
    public var kind: Kind
    /// The object's UUID (sent lowercase).
    public var uuid: UUID
    /// The bare class name (`"clsName"`).
    public var className: String
    /// Property name → wire value: strings, numbers, booleans, null, or flat arrays of one type.
    public var properties: [String: JSON]
    /// Contrail extension (§8.4): for collection keys of a `change`, the collection as it was
    /// before the local edit, so a server can merge concurrent edits. Omitted from the wire when nil.
    public var bases: [String: [UUID]]?
    /// Contrail extension (§8.21, `"text"` on the wire): for `SharedText` keys, the operations
    /// (`TextOperation.json`) of a change, or the whole state (`TextDocument.stateJSON`) in an `add`
    /// or a full state. `properties` still carries the plain text. Omitted when nil.
    public var textOperations: [String: JSON]?
    /// Contrail extension (§8.21, `"counter"` on the wire): for `SharedCounter` keys, how much the
    /// change added (negative: subtracted). `properties` still carries the plain total. Omitted when nil.
    public var counterDeltas: [String: Int64]?
    /// Contrail extension (§8.24): collection keys of a `change` sent as an edit of the base the
    /// sender saw instead of a whole array (such a key is in neither `properties` nor `bases`).
    /// `"collectionOps"` on the wire; omitted when nil. Sent only to a server that lists the
    /// `collectionOps` extension.
    public var collectionEdits: [String: CollectionEdit]?

    /// Creates a fragment.
    public init(kind: Kind, uuid: UUID, className: String, properties: [String: JSON] = [:], bases: [String: [UUID]]? = nil,
                textOperations: [String: JSON]? = nil, counterDeltas: [String: Int64]? = nil,
                collectionEdits: [String: CollectionEdit]? = nil) {
        self.kind = kind
        self.uuid = uuid
        self.className = className
        self.properties = properties
        self.bases = bases
        self.textOperations = textOperations
        self.counterDeltas = counterDeltas
        self.collectionEdits = collectionEdits
    }

    /// Decodes and checks a fragment as the server does at parse time (§3): `type` is add/change,
    /// `uuid` a parseable UUID, `clsName` a string, `properties` (if present) an object whose values
    /// are strings, numbers, booleans, null or flat arrays of one type. Missing `properties` is `{}`.
    public init(json: JSON) throws(WireError) {
        guard case .object(let members) = json else {
            throw WireError.invalidFragment(index: nil, reason: "Fragment is not an object")
        }
        guard case .string(let typeName)? = members["type"], let kind = Kind(rawValue: typeName) else {
            throw WireError.invalidFragment(index: nil, reason: "Invalid type")
        }
        guard case .string(let uuidString)? = members["uuid"], let uuid = UUID(wireString: uuidString) else {
            throw WireError.invalidFragment(index: nil, reason: "Invalid uuid")
        }
        guard case .string(let className)? = members["clsName"] else {
            throw WireError.invalidFragment(index: nil, reason: "Invalid clsName")
        }
        var properties: [String: JSON] = [:]
        switch members["properties"] {
        case nil, .null?:
            break
        case .object(let values)?:
            for (key, value) in values {
                if let problem = Self.problem(with: value) {
                    throw WireError.invalidFragment(index: nil, reason: "Property '\(key)': \(problem)")
                }
            }
            properties = values
        default:
            throw WireError.invalidFragment(index: nil, reason: "Invalid properties")
        }
        var bases: [String: [UUID]]?
        switch members["bases"] {
        case nil, .null?:
            break
        case .object(let values)?:
            var decoded: [String: [UUID]] = [:]
            decoded.reserveCapacity(values.count)
            for (key, value) in values {
                guard case .array(let elements) = value else {
                    throw WireError.invalidFragment(index: nil, reason: "Base '\(key)' is not an array of UUIDs")
                }
                var uuids: [UUID] = []
                uuids.reserveCapacity(elements.count)
                for element in elements {
                    guard case .string(let text) = element, let uuid = UUID(wireString: text) else {
                        throw WireError.invalidFragment(index: nil, reason: "Base '\(key)' is not an array of UUIDs")
                    }
                    uuids.append(uuid)
                }
                decoded[key] = uuids
            }
            bases = decoded
        default:
            throw WireError.invalidFragment(index: nil, reason: "Invalid bases")
        }
        var textOperations: [String: JSON]?
        switch members["text"] {
        case nil, .null?:
            break
        case .object(let values)?:
            for (key, value) in values where value.objectValue == nil || properties[key] == nil {
                throw WireError.invalidFragment(index: nil, reason: "Text '\(key)' is not an object beside a plain value")
            }
            textOperations = values
        default:
            throw WireError.invalidFragment(index: nil, reason: "Invalid text")
        }
        var counterDeltas: [String: Int64]?
        switch members["counter"] {
        case nil, .null?:
            break
        case .object(let values)?:
            var decoded: [String: Int64] = [:]
            for (key, value) in values {
                guard case .int(let delta) = value, properties[key] != nil else {
                    throw WireError.invalidFragment(index: nil, reason: "Counter '\(key)' is not an integer beside a plain value")
                }
                decoded[key] = delta
            }
            counterDeltas = decoded
        default:
            throw WireError.invalidFragment(index: nil, reason: "Invalid counter")
        }
        var edits: [String: CollectionEdit]?
        switch members["collectionOps"] {
        case nil, .null?:
            break
        case .object(let values)? where kind == .change:
            var decoded: [String: CollectionEdit] = [:]
            for (key, value) in values {
                guard properties[key] == nil, bases?[key] == nil else {
                    throw WireError.invalidFragment(index: nil, reason: "Collection operations '\(key)' beside a value")
                }
                decoded[key] = try CollectionEdit(json: value, key: key)
            }
            edits = decoded
        default:
            throw WireError.invalidFragment(index: nil, reason: "Invalid collectionOps")
        }
        self.init(kind: kind, uuid: uuid, className: className, properties: properties, bases: bases,
                  textOperations: textOperations, counterDeltas: counterDeltas, collectionEdits: edits)
    }

    /// The wire form: always has `properties` (maybe `{}`), the UUID lowercase, `bases` only when set.
    public var json: JSON {
        var members: [String: JSON] = [
            "type": .string(kind.rawValue),
            "uuid": .string(uuid.wireString),
            "clsName": .string(className),
            "properties": .object(properties),
        ]
        if let bases {
            members["bases"] = .object(bases.mapValues { .array($0.map { .string($0.wireString) }) })
        }
        if let textOperations { members["text"] = .object(textOperations) }
        if let counterDeltas { members["counter"] = .object(counterDeltas.mapValues { .int($0) }) }
        if let collectionEdits {
            members["collectionOps"] = .object(collectionEdits.mapValues(\.json))
        }
        return .object(members)
    }

    /// The JSON array of `fragments`, written straight to bytes (the same text as serializing
    /// `JSON.array(fragments.map(\.json))`, without building those values first).
    public static func serialized(_ fragments: [SyncFragment]) -> [UInt8] {
        var writer = JSONWriter(sortedKeys: false, capacity: 2 + fragments.count * 160)
        write(fragments, into: &writer)
        return writer.bytes
    }

    package static func write(_ fragments: [SyncFragment], into writer: inout JSONWriter) {
        writer.append("[")
        for position in fragments.indices {
            if position > 0 { writer.append(",") }
            fragments[position].write(into: &writer)  // borrowed in place, not copied
        }
        writer.append("]")
    }

    /// Writes the same object as `json`, without building it first.
    func write(into writer: inout JSONWriter) {
        writer.append("{")
        writer.writeKey("type", first: true)
        writer.writeString(kind.rawValue)
        writer.writeKey("uuid")
        writer.writeUUID(uuid)
        writer.writeKey("clsName")
        writer.writeString(className)
        writer.writeKey("properties")
        writer.write(.object(properties))
        if let bases {
            // The same text as `.object(bases.mapValues { .array(… .string(wireString)) })`, unbuilt.
            writer.writeKey("bases")
            writer.append(byte: UInt8(ascii: "{"))
            for (index, (key, base)) in bases.enumerated() {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                writer.writeString(key)
                writer.append(byte: UInt8(ascii: ":"))
                writer.append(byte: UInt8(ascii: "["))
                for (position, uuid) in base.enumerated() {
                    if position > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    writer.writeUUID(uuid)
                }
                writer.append(byte: UInt8(ascii: "]"))
            }
            writer.append(byte: UInt8(ascii: "}"))
        }
        if let textOperations {
            writer.writeKey("text")
            writer.write(.object(textOperations))
        }
        if let counterDeltas {
            writer.writeKey("counter")
            writer.write(.object(counterDeltas.mapValues { .int($0) }))
        }
        if let collectionEdits {
            writer.writeKey("collectionOps")
            writer.write(.object(collectionEdits.mapValues(\.json)))
        }
        writer.append("}")
    }

    /// Why `value` is not an acceptable property value, with the server's wording; `nil` if it is.
    /// A `null` element of an array is a hole (NaN, or nil in an optional element) and may stand
    /// among elements of one other kind (Protocol §3). O(n) in the elements of an array.
    package static func problem(with value: JSON) -> String? {
        switch value {
        case .null, .bool, .int, .uint, .double, .string:
            return nil
        case .object:
            return "not a string, number, boolean, array, date, null"
        case .array(let elements):
            var firstKind: Int?
            for element in elements {
                let kind: Int
                switch element {
                case .null: continue
                case .bool: kind = 1
                case .int, .uint, .double: kind = 2
                case .string: kind = 3
                case .array: return "cannot have arrays in an array"
                case .object: return "not a string, number, boolean, array, date, null"
                }
                if let firstKind, firstKind != kind { return "not all array value types match" }
                firstKind = kind
            }
            return nil
        }
    }

    /// Why an original Jetstream server would reject this fragment although Contrail accepts it
    /// (an array with a `null` hole among other values: the original counts null as a kind of its
    /// own, Protocol §3), with its wording; `nil` if it would not. O(total array elements).
    package var jetstreamProblem: String? {
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            guard case .array(let elements) = value, elements.contains(where: \.isNull),
                  elements.contains(where: { !$0.isNull })
            else { continue }
            return "Property '\(key)': not all array value types match"
        }
        return nil
    }

    /// Encodes as the wire object.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// Decodes from the wire object, with the same checks as ``init(json:)``.
    public init(from decoder: any Decoder) throws {
        try self.init(json: JSON(from: decoder))
    }
}
