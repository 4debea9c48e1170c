import Foundation

/// Reads and checks the fields of one message object, producing `WireError.invalidMessage` with
/// the original server's wording.
struct WireFields {
    let type: String
    let members: [String: JSON]

    /// Fails unless `json` is an object.
    init(_ json: JSON, type: String) throws(WireError) {
        guard case .object(let members) = json else {
            throw WireError.invalidMessage(type: type, reason: "Message is not an object")
        }
        self.type = type
        self.members = members
    }

    func failure(_ reason: String) -> WireError {
        .invalidMessage(type: type, reason: reason)
    }

    /// A required non-negative integer (`1.0` counts, as in JavaScript; `-1`, `1.5`, `"1"` do not).
    func unsigned(_ key: String, _ reason: String) throws(WireError) -> Int {
        guard let value = members[key], let number = value.uint64Value, number <= UInt64(Int.max) else {
            throw failure(reason)
        }
        return Int(number)
    }

    /// An optional non-negative integer; missing or `null` is `nil`.
    func optionalUnsigned(_ key: String, _ reason: String) throws(WireError) -> Int? {
        switch members[key] {
        case nil, .null?: return nil
        default: return try unsigned(key, reason)
        }
    }

    func index() throws(WireError) -> Int {
        try unsigned("index", "Invalid index")
    }

    func string(_ key: String, _ reason: String) throws(WireError) -> String {
        guard case .string(let value)? = members[key] else { throw failure(reason) }
        return value
    }

    /// An optional string; missing or `null` is `nil`, another type fails.
    func optionalString(_ key: String, _ reason: String) throws(WireError) -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw failure(reason)
        }
    }

    /// An optional object; missing or `null` is `{}`, another type fails.
    func object(_ key: String, _ reason: String) throws(WireError) -> [String: JSON] {
        switch members[key] {
        case nil, .null?: return [:]
        case .object(let value)?: return value
        default: throw failure(reason)
        }
    }

    /// An optional array of strings; missing or `null` is `[]`, another shape fails.
    func strings(_ key: String, _ reason: String) throws(WireError) -> [String] {
        switch members[key] {
        case nil, .null?: return []
        case .array(let elements)?:
            var strings: [String] = []
            for case .string(let value) in elements { strings.append(value) }
            guard strings.count == elements.count else { throw failure(reason) }
            return strings
        default: throw failure(reason)
        }
    }

    /// An optional `{message,type?}` error; missing or `null` is `nil`.
    func errorBody(_ key: String) throws(WireError) -> WireErrorBody? {
        switch members[key] {
        case nil, .null?: return nil
        case let value?:
            guard let body = WireErrorBody(json: value) else { throw failure("Invalid \(key)") }
            return body
        }
    }

    /// The `fragments` array (required).
    func fragmentArray() throws(WireError) -> [JSON] {
        guard case .array(let elements)? = members["fragments"] else { throw failure("SyncFragments not on `fragments`") }
        return elements
    }

    /// The `fragments` array decoded; a bad element fails with `WireError.invalidFragment(index:reason:)`
    /// naming its position. O(fragments).
    func syncFragments() throws(WireError) -> [SyncFragment] {
        let elements = try fragmentArray()
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(elements.count)
        for (position, element) in elements.enumerated() {
            do {
                fragments.append(try SyncFragment(json: element))
            } catch {
                if case .invalidFragment(_, let reason) = error {
                    throw WireError.invalidFragment(index: position, reason: reason)
                }
                throw error
            }
        }
        return fragments
    }

    /// The required `rootUUID`.
    func rootUUID() throws(WireError) -> UUID {
        guard case .string(let text)? = members["rootUUID"], let root = UUID(wireString: text) else {
            throw failure("Invalid rootUUID")
        }
        return root
    }
}
