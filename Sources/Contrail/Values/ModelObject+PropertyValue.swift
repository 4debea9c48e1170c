import Foundation

/// A model object as a property value is a reference: its UUID on the wire. The conformance is
/// isolated to the main actor, as the model tree is.
extension ModelObject: @MainActor PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .string(uuid.wireString) }

    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Self {
        guard case .string(let text) = wire, let uuid = UUID(wireString: text) else {
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
