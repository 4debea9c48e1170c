import Foundation

/// One sort key of one object, as a query stores it: common types inline, anything else boxed.
/// A query keeps the keys its entries were sorted by, so a change finds an object's old place
/// after its properties have already changed.
enum QueryKeyComponent {
    case null
    case int(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case other(AnyComparableBox)

    /// -1, 0 or 1 as `self` sorts before, with or after `other`: a total order (NaN after every
    /// number, `null` before every value). Components of one query's sort criterion always have the
    /// same case or are `null`.
    @inline(__always)
    func compare(_ other: QueryKeyComponent) -> Int {
        switch (self, other) {
        case (.double(let a), .double(let b)):
            if a < b { return -1 }
            if b < a { return 1 }
            if a == b { return 0 }
            return a.isNaN ? (b.isNaN ? 0 : 1) : -1
        case (.int(let a), .int(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.unsigned(let a), .unsigned(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.string(let a), .string(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.other(let a), .other(let b)): return a.compare(b)
        case (.null, .null): return 0
        default: return rank < other.rank ? -1 : (rank == other.rank ? 0 : 1)
        }
    }

    /// The order between components of different cases (only `null` meets another case).
    private var rank: Int {
        switch self {
        case .null: 0
        case .int: 1
        case .unsigned: 2
        case .double: 3
        case .string: 4
        case .other: 5
        }
    }

    /// The component as a tag and a number whose order, compared as (tag, number), is `compare`'s,
    /// reversed when `descending`: the tag says whether the value is `null`, the number holds an
    /// inline value (0 for a string or a boxed value, which `isInline` is false for: those are
    /// compared whole). Doubles map to their IEEE bits, the negative ones inverted, with every NaN as
    /// one NaN (after every number) and -0 as 0, so that equal doubles map to equal numbers.
    @inline(__always)
    func encoded(isInline: Bool, descending: Bool) -> (tag: UInt8, key: UInt64) {
        let sign: UInt64 = 1 << 63
        var tag: UInt8 = 1
        var key: UInt64 = 0
        switch self {
        case .null: tag = 0
        case .double(var value):
            if value.isNaN { value = .nan } else if value == 0 { value = 0 }
            let bits = value.bitPattern
            key = bits & sign != 0 ? ~bits : bits | sign
        case .int(let value): key = UInt64(bitPattern: value) ^ sign
        case .unsigned(let value): key = value
        case .string, .other: assert(!isInline, "a string or boxed key is never inline")
        }
        if !isInline { key = 0 }
        return descending ? (1 - tag, ~key) : (tag, key)
    }

    /// Whether values of type `Value` are components that `encoded` holds whole in its number.
    static func isInline<Value>(_ type: Value.Type) -> Bool {
        Value.self == Double.self || Value.self == Int.self || Value.self == Date.self || Value.self == Float.self
            || Value.self == Int64.self || Value.self == Int32.self || Value.self == UInt64.self || Value.self == UInt.self
    }

    /// A reader of `keyPath`'s value as a component.
    @MainActor
    static func reader<Model, Value: Comparable>(_ keyPath: KeyPath<Model, Value>) -> @MainActor (Model) -> QueryKeyComponent {
        { @MainActor in component($0[keyPath: keyPath]) }
    }

    /// A reader of an optional `keyPath`'s value: `null` for nil.
    @MainActor
    static func optionalReader<Model, Value: Comparable>(_ keyPath: KeyPath<Model, Value?>) -> @MainActor (Model) -> QueryKeyComponent {
        { @MainActor model in model[keyPath: keyPath].map { component($0) } ?? .null }
    }

    /// `value` as a component: unboxed for the common types (a compare of type metadata each).
    static func component<Value: Comparable>(_ value: Value) -> QueryKeyComponent {
        if Value.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if Value.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if Value.self == Date.self { return .double(unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate) }
        if Value.self == Float.self { return .double(Double(unsafeBitCast(value, to: Float.self))) }
        if Value.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if Value.self == Int32.self { return .int(Int64(unsafeBitCast(value, to: Int32.self))) }
        if Value.self == UInt64.self { return .unsigned(unsafeBitCast(value, to: UInt64.self)) }
        if Value.self == UInt.self { return .unsigned(UInt64(unsafeBitCast(value, to: UInt.self))) }
        return .other(ComparableBox(value))
    }
}

/// A boxed `Comparable` sort key of a type the query does not store inline.
class AnyComparableBox {
    /// -1, 0 or 1; `other` holds the same type (one criterion reads one key path).
    func compare(_ other: AnyComparableBox) -> Int { 0 }
}

/// A boxed key of type `Value`.
final class ComparableBox<Value: Comparable>: AnyComparableBox {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }

    override func compare(_ other: AnyComparableBox) -> Int {
        let other = unsafeDowncast(other, to: ComparableBox<Value>.self).value
        return value < other ? -1 : (other < value ? 1 : 0)
    }
}
