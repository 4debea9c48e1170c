/// Type-erased access to a `@Property`'s storage inside a model object, found by field offset: what
/// the model tree needs to read, hold and write a property without key paths. The value coding
/// (`PropertyCoding`) refines it with the wire side.
@MainActor
protocol PropertyStorage {
    static var valueKind: PropertyValueKind { get }
    static var typeName: String { get }
    static var modelTypes: [ModelObject.Type] { get }
    static func models(in object: ModelObject, offset: Int) -> [ModelObject]
    /// Whether the property's type is an array of model objects (``ModelList``): its wire value
    /// is then exactly its models' UUIDs, in order.
    static var isModelList: Bool { get }
    /// For a ``ModelList`` property, its value holding `models`, boxed; nil for another property
    /// or a model of another class. Only the models from `start` on are checked for the class (the
    /// caller knows the ones before are of it: they come from a value of this property).
    /// O(n - start), as no model before `start` is cast.
    static func modelList(_ models: [ModelObject], checkingFrom start: Int) -> Any?
    /// The model objects a boxed value of this property's type holds.
    static func models(of value: Any) -> [ModelObject]
    /// Stores a boxed value of the property's type (read by `value(in:offset:)` or decoded) and
    /// notifies as a local set does.
    static func store(_ value: Any, in object: ModelObject, offset: Int, index: Int)
    /// Puts back a boxed value of the property's type without notifying anyone (a refused set).
    static func restore(_ value: Any, in object: ModelObject, offset: Int)
    /// The current value, boxed.
    static func value(in object: ModelObject, offset: Int) -> Any
    /// The current value without any reference to `model`, boxed: nil for an optional reference
    /// to it, the other elements of a collection; nil when nothing refers to it or it cannot let go.
    static func value(in object: ModelObject, offset: Int, without model: ModelObject) -> Any?
    /// Whether the value may be absent: an optional (or a floating-point number, which reads a
    /// wire null as NaN).
    static var isOptional: Bool { get }
}
