import Foundation

/// Maps class names to `ModelObject` subclasses, so that objects added remotely can be created.
///
/// A class registers itself the first time Contrail looks at it (for example when it joins a scope),
/// together with every model class its properties can hold. Register the classes only a remote peer
/// creates (subclasses, say) up front:
/// ```swift
/// ModelRegistry.register(Circle.self, Square.self)
/// ```
@MainActor
public enum ModelRegistry {
    private static var classes: [String: ModelObject.Type] = [:]

    /// Registers the classes and every model class reachable through their properties.
    public static func register(_ types: ModelObject.Type...) {
        for type in types { _ = ModelClassInfo.of(type) }
    }

    /// The class registered under `name`.
    public static func modelClass(named name: String) throws(ModelError) -> ModelObject.Type {
        guard let type = classes[name] else { throw .unknownClass(name) }
        return type
    }

    /// A new instance of the class registered under `className`, with the given UUID.
    public static func make(className: String, uuid: UUID) throws(ModelError) -> ModelObject {
        try modelClass(named: className).init(uuid: uuid)
    }

    static func registerReachable(from info: ModelClassInfo) {
        classes[info.className] = info.type
        for property in info.properties {
            for type in property.storage.modelTypes where classes[type.className] == nil {
                _ = ModelClassInfo.of(type)
            }
        }
    }
}
