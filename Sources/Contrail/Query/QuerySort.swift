import Foundation

/// One sort criterion of a live query: a key path of the model, ascending or descending.
///
/// ```swift
/// scope.query(Task.self, where: { !$0.done }, sortedBy: .descending(\.created), .ascending(\.title))
/// ```
/// Any `Comparable` value works; `Int`s, `Double`s, `Float`s, `String`s and `Date`s are compared
/// without boxing. An optional key sorts `nil` first when ascending. NaN sorts after every number.
/// Objects with equal keys are ordered by uuid, so every replica orders them alike.
@MainActor
public struct QuerySort<Model: ModelObject> {
    /// Reads the key of one object.
    let key: @MainActor (Model) -> QueryKeyComponent
    /// Whether larger keys come first.
    let isDescending: Bool
    /// Whether the keys are numbers a query compares without their boxes (`QueryKeyComponent.isInline`).
    let isInline: Bool

    /// Smaller values of `keyPath` first.
    public static func ascending<Value: Comparable>(_ keyPath: KeyPath<Model, Value>) -> QuerySort {
        QuerySort(key: QueryKeyComponent.reader(keyPath), isDescending: false, isInline: QueryKeyComponent.isInline(Value.self))
    }

    /// Larger values of `keyPath` first.
    public static func descending<Value: Comparable>(_ keyPath: KeyPath<Model, Value>) -> QuerySort {
        QuerySort(key: QueryKeyComponent.reader(keyPath), isDescending: true, isInline: QueryKeyComponent.isInline(Value.self))
    }

    /// Smaller values of `keyPath` first, `nil` before every value.
    public static func ascending<Value: Comparable>(_ keyPath: KeyPath<Model, Value?>) -> QuerySort {
        QuerySort(key: QueryKeyComponent.optionalReader(keyPath), isDescending: false, isInline: QueryKeyComponent.isInline(Value.self))
    }

    /// Larger values of `keyPath` first, `nil` after every value.
    public static func descending<Value: Comparable>(_ keyPath: KeyPath<Model, Value?>) -> QuerySort {
        QuerySort(key: QueryKeyComponent.optionalReader(keyPath), isDescending: true, isInline: QueryKeyComponent.isInline(Value.self))
    }
}
