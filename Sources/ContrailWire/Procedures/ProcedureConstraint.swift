import Foundation

/// One constraint of a procedure (Protocol §4.7): which fragments a procedure call may carry.
///
/// ```swift
/// let rename = ProcedureConstraint(kind: .change, className: "Canvas", properties: ["name": .hasNewValue])
/// ProcedureConstraint.allMatch([rename], fragments) { _, _ in nil }
/// ```
public struct ProcedureConstraint: Sendable, Equatable {
    /// What a constrained property must hold.
    public enum Expectation: Sendable, Equatable {
        /// Exactly this wire value (numbers compare by value).
        case value(JSON)
        /// Any value: the key's presence is enough.
        case hasNewValue
        /// A collection that grows (on `add`: any array).
        case arrayInsert
        /// A collection that shrinks (the original tested "longer" here, §6: fixed).
        case arrayRemove
    }

    /// The fragment type the constraint matches.
    public var kind: SyncFragment.Kind
    /// The class name the constraint matches.
    public var className: String
    /// Expected properties by key.
    public var properties: [String: Expectation]
    /// Whether a fragment may carry keys the constraint does not list (default false, as the
    /// original server).
    public var allowsAdditionalProperties: Bool

    /// A constraint.
    public init(kind: SyncFragment.Kind, className: String, properties: [String: Expectation] = [:],
                allowsAdditionalProperties: Bool = false) {
        self.kind = kind
        self.className = className
        self.properties = properties
        self.allowsAdditionalProperties = allowsAdditionalProperties
    }

    /// Whether `fragment` matches. `old(uuid, key)` gives a collection's value before the change
    /// (the server's current value, or the client's remembered original); nil when unknown.
    /// O(properties).
    public func matches(_ fragment: SyncFragment, old: (UUID, String) -> JSON?) -> Bool {
        guard fragment.kind == kind, fragment.className == className else { return false }
        if properties.isEmpty { return allowsAdditionalProperties || fragment.properties.isEmpty }
        if !allowsAdditionalProperties && fragment.properties.count != properties.count { return false }
        for (key, expectation) in properties {
            guard let value = fragment.properties[key] else { return false }
            switch expectation {
            case .hasNewValue:
                continue
            case .value(let expected):
                guard Self.equal(value, expected) else { return false }
            case .arrayInsert, .arrayRemove:
                guard case .array(let new) = value else { return false }
                if fragment.kind == .add {
                    guard expectation == .arrayInsert else { return false }
                    continue
                }
                let oldCount = old(fragment.uuid, key)?.arrayValue?.count ?? 0
                if expectation == .arrayInsert ? new.count <= oldCount : new.count >= oldCount { return false }
            }
        }
        return true
    }

    /// Whether every fragment is matched by at least one constraint (an empty change set always
    /// matches, §4.7). O(fragments × constraints × properties).
    public static func allMatch(_ constraints: [ProcedureConstraint], _ fragments: [SyncFragment],
                                old: (UUID, String) -> JSON?) -> Bool {
        fragments.allSatisfy { fragment in constraints.contains { $0.matches(fragment, old: old) } }
    }

    private static func equal(_ a: JSON, _ b: JSON) -> Bool {
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }
}

extension ProcedureConstraint {
    /// Reads `{"type": "add"|"change", "clsName": …, "properties": {key: value | {"$hasNewValue": true}
    /// | {"$arrayInsert": true} | {"$arrayRemove": true}}, "allowAdditionalProperties"?: Bool}`.
    public init(json: JSON) throws(ProcedureError) {
        guard case .string(let type)? = json["type"], let kind = SyncFragment.Kind(rawValue: type) else {
            throw .invalidDeclaration("constraint needs a type of add or change")
        }
        guard case .string(let className)? = json["clsName"] else { throw .invalidDeclaration("constraint needs a clsName") }
        var properties: [String: Expectation] = [:]
        for (key, value) in json["properties"]?.objectValue ?? [:] {
            switch value {
            case .object(let marker) where marker.count == 1 && marker["$hasNewValue"] == .bool(true): properties[key] = .hasNewValue
            case .object(let marker) where marker.count == 1 && marker["$arrayInsert"] == .bool(true): properties[key] = .arrayInsert
            case .object(let marker) where marker.count == 1 && marker["$arrayRemove"] == .bool(true): properties[key] = .arrayRemove
            default: properties[key] = .value(value)
            }
        }
        var allows = false
        switch json["allowAdditionalProperties"] {
        case nil: break
        case .bool(let value)?: allows = value
        default: throw .invalidDeclaration("allowAdditionalProperties must be a boolean")
        }
        self.init(kind: kind, className: className, properties: properties, allowsAdditionalProperties: allows)
    }
}
