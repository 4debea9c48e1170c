import Foundation

/// Looks up model objects by UUID while wire values are decoded (references and collections).
public typealias ModelResolver = (UUID) -> ModelObject?

/// A type that a `@Property` can hold: it knows its wire encoding (Protocol §3.1) and, through
/// `ModelValue`, what the model tree needs (for references and collections, which model objects
/// it holds). This is the one place values meet the wire: the model layer knows only `ModelValue`.
///
/// Conformances ship for `String`, `Bool`, every sized integer, `Float`, `Double`, `Date`, `Data`,
/// `URL`, `UUID`, `ModelColor`, optionals, arrays, model objects; a `RawRepresentable` enum only has to
/// declare the conformance: `enum Kind: String, PropertyValue { case circle, square }`.
///
/// The protocol is nonisolated: a plain value's `wireValue()` and `decode` run on any thread. Only
/// model objects conform on the main actor (`extension ModelObject: @MainActor PropertyValue`), and
/// so do optionals and arrays of them.
public protocol PropertyValue: ModelValue {
    /// The wire value.
    func wireValue() -> JSON
    /// Decodes a wire value; references resolve through `resolver`.
    static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Self
}

extension JSON {
    /// A short description of a wire value's type for error messages.
    var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .uint, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

// MARK: - Strings, booleans, numbers

extension String: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .string(self) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> String {
        guard case .string(let value) = wire else {
            throw .wrongType(property: property, expected: "a string", got: wire.typeDescription)
        }
        return value
    }
}

extension Bool: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .bool(self) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Bool {
        guard case .bool(let value) = wire else {
            throw .wrongType(property: property, expected: "a boolean", got: wire.typeDescription)
        }
        return value
    }
}

/// Every sized integer encodes as a JSON number and decodes with a range check.
public protocol IntegerPropertyValue: PropertyValue, FixedWidthInteger {}

extension IntegerPropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON {
        if Self.isSigned || self <= Int64.max { return .int(Int64(self)) }
        return .uint(UInt64(self))
    }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Self {
        let result: Self?
        switch wire {
        case .int(let value): result = Self(exactly: value)
        case .uint(let value): result = Self(exactly: value)
        case .double(let value): result = value.isFinite ? Self(exactly: value) : nil
        default: throw .wrongType(property: property, expected: "an integer", got: wire.typeDescription)
        }
        guard let result else {
            throw .outOfRange(property: property, value: "\(wire)", type: String(describing: Self.self))
        }
        return result
    }
}

extension Int: IntegerPropertyValue {}
extension Int8: IntegerPropertyValue {}
extension Int16: IntegerPropertyValue {}
extension Int32: IntegerPropertyValue {}
extension Int64: IntegerPropertyValue {}
extension UInt: IntegerPropertyValue {}
extension UInt8: IntegerPropertyValue {}
extension UInt16: IntegerPropertyValue {}
extension UInt32: IntegerPropertyValue {}
extension UInt64: IntegerPropertyValue {}

extension JSON {
    /// Any JSON number as a Double, or nil.
    var numberAsDouble: Double? {
        switch self {
        case .int(let value): Double(value)
        case .uint(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
}

/// Non-finite numbers on the wire (JSON has none): NaN goes out as `null`, which is also what
/// JavaScript peers send for NaN, and reads back as NaN; ±infinity goes out as the number
/// `±1e999` (too large for a double: every JSON parser, JavaScript's and the server's included,
/// reads it as ±infinity).
extension Double: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { isNaN ? .null : .double(self) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Double {
        if case .null = wire { return .nan }
        guard let value = wire.numberAsDouble else {
            throw .wrongType(property: property, expected: "a number", got: wire.typeDescription)
        }
        return value
    }
    /// NaN is the same as NaN here (a set of NaN onto NaN changes nothing).
    public static func isSame(_ lhs: Double, _ rhs: Double) -> Bool { lhs == rhs || (lhs.isNaN && rhs.isNaN) }
}

extension Float: PropertyValue {
    /// Encoded through its shortest decimal form, so `Float(0.1)` goes out as `0.1`; non-finite
    /// values as `Double`'s are.
    public func wireValue() -> JSON {
        isFinite ? .double(Double(description) ?? Double(self)) : Double(self).wireValue()
    }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Float {
        Float(try Double.decode(wire: wire, property: property, resolver: resolver))
    }
    /// Whether the two are the same value (a set of the same value notifies nobody).
    public static func isSame(_ lhs: Float, _ rhs: Float) -> Bool { lhs == rhs || (lhs.isNaN && rhs.isNaN) }
}

// MARK: - Foundation values

extension Date: PropertyValue {
    /// Seconds since the Unix epoch (Protocol §8.1); ISO-8601 strings are accepted on input.
    public func wireValue() -> JSON { .double(timeIntervalSince1970) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Date {
        if let seconds = wire.numberAsDouble { return Date(timeIntervalSince1970: seconds) }
        if case .string(let text) = wire {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            if let date = formatter.date(from: text) { return date }
        }
        throw .wrongType(property: property, expected: "epoch seconds or an ISO-8601 date", got: wire.typeDescription)
    }
}

extension Data: PropertyValue {
    /// Base64 (a Contrail extension: Jetstream has no bytes type).
    public func wireValue() -> JSON { .string(base64EncodedString()) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Data {
        guard case .string(let text) = wire, let data = Data(base64Encoded: text) else {
            throw .wrongType(property: property, expected: "base64 data", got: wire.typeDescription)
        }
        return data
    }
}

extension URL: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .string(absoluteString) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> URL {
        guard case .string(let text) = wire, let url = URL(string: text) else {
            throw .wrongType(property: property, expected: "a URL string", got: wire.typeDescription)
        }
        return url
    }
}

extension UUID: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .string(wireString) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> UUID {
        guard case .string(let text) = wire, let uuid = UUID(wireString: text) else {
            throw .wrongType(property: property, expected: "a UUID string", got: wire.typeDescription)
        }
        return uuid
    }
}

// MARK: - Enums

extension PropertyValue where Self: RawRepresentable, RawValue: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { rawValue.wireValue() }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Self {
        let raw = try RawValue.decode(wire: wire, property: property, resolver: resolver)
        guard let value = Self(rawValue: raw) else {
            throw .wrongType(property: property, expected: "a case of \(Self.self)", got: "\(wire)")
        }
        return value
    }
}

// MARK: - Optionals and arrays

extension Optional: PropertyValue where Wrapped: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { self?.wireValue() ?? .null }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Wrapped? {
        if case .null = wire { return nil }
        return try Wrapped.decode(wire: wire, property: property, resolver: resolver)
    }
}

extension Array: PropertyValue where Element: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .array(map { $0.wireValue() }) }
    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> [Element] {
        guard case .array(let items) = wire else {
            throw .wrongType(property: property, expected: "an array", got: wire.typeDescription)
        }
        var result: [Element] = []
        result.reserveCapacity(items.count)
        for item in items { result.append(try Element.decode(wire: item, property: property, resolver: resolver)) }
        return result
    }
}
