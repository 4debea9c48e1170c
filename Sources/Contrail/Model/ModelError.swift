import Foundation

/// Errors caused by model data that came from outside: wire values, class names, references.
public enum ModelError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A wire value does not have the type the property needs.
    case wrongType(property: String, expected: String, got: String)
    /// A number does not fit the property's integer type.
    case outOfRange(property: String, value: String, type: String)
    /// No registered `ModelObject` subclass has this class name.
    case unknownClass(String)
    /// A reference names an object that is neither in the scope nor added in the same batch.
    case danglingReference(property: String, uuid: String)
    /// A fragment names a property its class does not have.
    case unknownProperty(className: String, property: String)
    /// A fragment changes an object the scope does not hold.
    case unknownObject(UUID)
    /// A reference points at an object of the wrong class.
    case wrongClass(property: String, expected: String, got: String)
    /// The options of the class's `@Property` declarations could not be matched to its properties
    /// (`declarations` initialisers reported options for `properties` properties, or out of order),
    /// so the class is refused: none of its properties syncs. Debug builds trap instead.
    case propertyOptionsMismatch(className: String, declarations: Int, properties: Int)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .wrongType(let property, let expected, let got):
            "wrong type for '\(property)': expected \(expected), got \(got)"
        case .outOfRange(let property, let value, let type):
            "value \(value) for '\(property)' does not fit \(type)"
        case .unknownClass(let name):
            "unknown model class '\(name)': register it with ModelRegistry.register(_:)"
        case .danglingReference(let property, let uuid):
            "'\(property)' refers to object \(uuid), which is not in the scope or the batch"
        case .unknownProperty(let className, let property):
            "class '\(className)' has no synced property '\(property)'"
        case .unknownObject(let uuid):
            "no object with UUID \(uuid.uuidString.lowercased()) in the scope"
        case .wrongClass(let property, let expected, let got):
            "'\(property)' needs a \(expected), got a \(got)"
        case .propertyOptionsMismatch(let className, let declarations, let properties):
            PropertyOptionsMismatch(className: className, declarations: declarations, properties: properties).message
        }
    }
}
