import Foundation

/// A model object as a property value is a reference: its UUID on the wire. The conformance is
/// isolated to the main actor, as the model tree is.
extension ModelObject: @MainActor PropertyValue {
    /// Whether this is a plain value, a model reference or a model collection.
    public static var valueKind: PropertyValueKind { .reference }
    /// A short type name for error messages.
    public static var typeName: String { className }
    /// The model classes this type can hold.
    public static var modelTypes: [ModelObject.Type] { [self] }
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .string(uuid.uuidString.lowercased()) }
    /// The model objects this value holds, in order (O(n) for collections).
    public var models: [ModelObject] { [self] }

    /// Whether the two are the same value (a set of the same value notifies nobody).
    public static func isSame(_ lhs: ModelObject, _ rhs: ModelObject) -> Bool { lhs === rhs }

    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Self {
        guard case .string(let text) = wire, let uuid = UUID(uuidString: text) else {
            throw .wrongType(property: property, expected: "a UUID reference", got: wire.typeDescription)
        }
        guard let object = resolver(uuid) else {
            throw .danglingReference(property: property, uuid: text.lowercased())
        }
        guard let typed = object as? Self else {
            throw .wrongClass(property: property, expected: className, got: object.className)
        }
        return typed
    }
}
