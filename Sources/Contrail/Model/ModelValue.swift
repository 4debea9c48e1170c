/// What the model tree needs of a value a `@Property` holds: whether it is a plain value, a
/// reference or a collection of models, which models it holds, and when two values are the same.
/// `PropertyValue` refines it with the value's wire coding; conform to that one (a `@Property`
/// needs both).
public protocol ModelValue {
    /// Whether this is a plain value, a model reference, or a model collection.
    static var valueKind: PropertyValueKind { get }
    /// A short type name for error messages ("Double", "String?", "[Shape]").
    static var typeName: String { get }
    /// The model classes this type can hold (registered with the owning class).
    static var modelTypes: [ModelObject.Type] { get }
    /// Whether two values are the same (a set of the same value notifies nobody).
    static func isSame(_ lhs: Self, _ rhs: Self) -> Bool
    /// The model objects this value holds, in order (empty for plain values).
    var models: [ModelObject] { get }
}

extension ModelValue {
    /// Whether this is a plain value, a model reference or a model collection.
    public static var valueKind: PropertyValueKind { .value }
    /// A short type name for error messages.
    public static var typeName: String { String(describing: Self.self) }
    /// The model classes this type can hold.
    public static var modelTypes: [ModelObject.Type] { [] }
    /// The model objects this value holds, in order (O(n) for collections).
    public var models: [ModelObject] { [] }
}

extension ModelValue where Self: Equatable {
    /// Whether the two are the same value (a set of the same value notifies nobody).
    @inlinable public static func isSame(_ lhs: Self, _ rhs: Self) -> Bool { lhs == rhs }
}

extension Optional: ModelValue where Wrapped: ModelValue {
    /// Whether this is a plain value, a model reference or a model collection.
    public static var valueKind: PropertyValueKind { Wrapped.valueKind }
    /// A short type name for error messages.
    public static var typeName: String { Wrapped.typeName + "?" }
    /// The model classes this type can hold.
    public static var modelTypes: [ModelObject.Type] { Wrapped.modelTypes }
    /// Whether the two are the same value (a set of the same value notifies nobody).
    public static func isSame(_ lhs: Wrapped?, _ rhs: Wrapped?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let l?, let r?): Wrapped.isSame(l, r)
        default: false
        }
    }
    /// The model objects this value holds, in order (O(n) for collections).
    public var models: [ModelObject] { self?.models ?? [] }
}

extension Array: ModelValue where Element: ModelValue {
    /// `[SomeModel]` is a collection of models; `[Double]` and friends are plain values.
    public static var valueKind: PropertyValueKind { Element.valueKind == .value ? .value : .collection }
    /// A short type name for error messages.
    public static var typeName: String { "[\(Element.typeName)]" }
    /// The model classes this type can hold.
    public static var modelTypes: [ModelObject.Type] { Element.modelTypes }
    /// Whether the two are the same value (a set of the same value notifies nobody).
    public static func isSame(_ lhs: [Element], _ rhs: [Element]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { Element.isSame($0, $1) }
    }
    /// The model objects this value holds, in order (O(n) for collections).
    public var models: [ModelObject] {
        if Element.valueKind == .value { return [] }
        // An array of models is its models as they are (not cast element by element).
        if let list = Self.self as? any ModelList.Type, let objects = list.models(of: self) { return objects }
        if let objects = self as? [ModelObject] { return objects }
        return flatMap(\.models)
    }
}
