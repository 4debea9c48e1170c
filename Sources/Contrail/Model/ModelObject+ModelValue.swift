/// A model object as a property value is a reference. The conformance is isolated to the main
/// actor, as the model tree is.
extension ModelObject: @MainActor ModelValue {
    /// Whether this is a plain value, a model reference or a model collection.
    public static var valueKind: PropertyValueKind { .reference }
    /// A short type name for error messages.
    public static var typeName: String { className }
    /// The model classes this type can hold.
    public static var modelTypes: [ModelObject.Type] { [self] }
    /// The model objects this value holds, in order (O(n) for collections).
    public var models: [ModelObject] { [self] }

    /// Whether the two are the same value (a set of the same value notifies nobody).
    public static func isSame(_ lhs: ModelObject, _ rhs: ModelObject) -> Bool { lhs === rhs }
}
