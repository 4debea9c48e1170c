import Foundation

/// A JSON value, as it travels on the Jetstream wire.
///
/// Numbers keep the kind of their literal: integer literals that fit `Int64` are `.int`, larger
/// unsigned ones `.uint`, and anything with a fraction or exponent (or too large for `UInt64`)
/// is `.double`. So `1` and `1.0` are different values, and `.int(1) != .double(1)`.
///
/// ```swift
/// let value = try JSON(parsing: #"{"x": 10, "tags": ["a", "b"]}"#)
/// value["x"]?.int64Value          // 10
/// value.jsonString                // {"x":10,"tags":["a","b"]} (key order unspecified)
/// ```
public enum JSON: Hashable, Sendable {
    /// `null`
    case null
    /// `true` or `false`
    case bool(Bool)
    /// An integer literal that fits `Int64`.
    case int(Int64)
    /// An integer literal above `Int64.max` that fits `UInt64`.
    case uint(UInt64)
    /// A number with a fraction or exponent, or an integer too large for `UInt64`.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSON])
    /// An object. Duplicate keys in parsed input keep the last value.
    case object([String: JSON])
}

// MARK: - Accessors

extension JSON {
    /// The string, if this is `.string`.
    @inlinable public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is `.bool`.
    @inlinable public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value as `Int64`: from `.int`, from `.uint` when in range, or from an integral `.double`
    /// in range. `nil` otherwise.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .uint(let value): return value <= UInt64(Int64.max) ? Int64(value) : nil
        case .double(let value):
            // -2^63 ... 2^63 (exclusive): Int64(exactly:) rejects fractions and out-of-range values.
            return Int64(exactly: value)
        default: return nil
        }
    }

    /// The value as `UInt64`: from a non-negative `.int`, from `.uint`, or from an integral,
    /// non-negative `.double` in range. `nil` otherwise.
    public var uint64Value: UInt64? {
        switch self {
        case .int(let value): return value >= 0 ? UInt64(value) : nil
        case .uint(let value): return value
        case .double(let value): return UInt64(exactly: value)
        default: return nil
        }
    }

    /// Any number as `Double` (large integers are rounded to the nearest `Double`).
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .uint(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// `true` for `.int`, `.uint` and `.double`.
    public var isNumber: Bool {
        switch self {
        case .int, .uint, .double: return true
        default: return false
        }
    }

    /// The elements, if this is `.array`.
    @inlinable public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is `.object`.
    @inlinable public var objectValue: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// `true` for `.null`.
    @inlinable public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member named `key` if this is an object that has it; `nil` otherwise.
    @inlinable public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` if this is an array and `index` is in range; `nil` otherwise.
    @inlinable public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}

// MARK: - Parsing

extension JSON {
    /// Parses one JSON document (RFC 8259, strict) from UTF-8 bytes.
    ///
    /// Rejects trailing commas, comments, leading zeros, `NaN`/`Infinity`, invalid UTF-8, bad
    /// escapes and unpaired surrogates, nesting deeper than `limits.maxDepth` and input longer than
    /// `limits.maxBytes`. The error names the byte offset of the problem.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONLimits = .init()) throws(JSONError) {
        var parser = JSONParser(bytes: bytes, limits: limits)
        self = try parser.parseDocument()
    }

    /// Parses one JSON document from UTF-8 bytes. See ``init(parsing:limits:)-(UnsafeRawBufferPointer,_)``.
    public init(parsing bytes: [UInt8], limits: JSONLimits = .init()) throws(JSONError) {
        let result: Result<JSON, JSONError> = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) in try JSON(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses one JSON document from any collection of UTF-8 bytes (contiguous storage is read in
    /// place; other collections are copied once).
    public init(parsing bytes: some Collection<UInt8>, limits: JSONLimits = .init()) throws(JSONError) {
        let direct: Result<JSON, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) in try JSON(parsing: UnsafeRawBufferPointer(buffer), limits: limits) }
        }
        if let direct {
            self = try direct.get()
        } else {
            try self.init(parsing: Array(bytes), limits: limits)
        }
    }

    /// Parses one JSON document from `Data`.
    public init(parsing data: Data, limits: JSONLimits = .init()) throws(JSONError) {
        let result: Result<JSON, JSONError> = data.withUnsafeBytes { raw in
            Result { () throws(JSONError) in try JSON(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses one JSON document from a string.
    public init(parsing string: String, limits: JSONLimits = .init()) throws(JSONError) {
        var string = string
        let result: Result<JSON, JSONError> = string.withUTF8 { buffer in
            Result { () throws(JSONError) in try JSON(parsing: UnsafeRawBufferPointer(buffer), limits: limits) }
        }
        self = try result.get()
    }
}

// MARK: - Serializing

extension JSON {
    /// The UTF-8 JSON text of this value, without whitespace.
    ///
    /// Doubles are written in their shortest form that parses back to the same value; non-finite
    /// doubles (which JSON cannot express) are written as `null`. With `sortedKeys`, object members
    /// are written in ascending key order, which makes the output deterministic.
    public func serialized(sortedKeys: Bool = false) -> [UInt8] {
        var writer = JSONWriter(sortedKeys: sortedKeys)
        writer.write(self)
        return writer.bytes
    }

    /// The JSON text of this value (see ``serialized(sortedKeys:)``), keys in unspecified order.
    public var jsonString: String {
        String(decoding: serialized(), as: UTF8.self)
    }
}

extension JSON: CustomStringConvertible {
    /// The JSON text, keys sorted.
    public var description: String {
        String(decoding: serialized(sortedKeys: true), as: UTF8.self)
    }
}
