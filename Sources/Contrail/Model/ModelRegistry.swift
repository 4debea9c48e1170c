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
    /// Whether making a class whose `@Property` options cannot be matched traps (debug builds only;
    /// release builds never trap). Tests of the refusal turn it off; nothing else should.
    package static var trapsOnOptionsMismatch = true

    /// Registers the classes and every model class reachable through their properties.
    public static func register(_ types: ModelObject.Type...) {
        for type in types { _ = ModelClassInfo.of(type) }
    }

    /// Registers the classes like `register(_:)`, and throws `ModelError.propertyOptionsMismatch`
    /// for the first one (or a class reachable from it) whose `@Property` options cannot be
    /// matched to its properties: such a class is refused (in debug builds, making it traps).
    public static func validate(_ types: ModelObject.Type...) throws(ModelError) {
        var seen = Set<ObjectIdentifier>()
        var stack = types
        while let type = stack.popLast() {
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            let info = ModelClassInfo.of(type)
            try info.checkOptions()
            for property in info.properties { stack.append(contentsOf: property.storage.modelTypes) }
        }
    }

    /// The class registered under `name`; throws `ModelError.unknownClass` for none, and
    /// `.propertyOptionsMismatch` for a refused class.
    public static func modelClass(named name: String) throws(ModelError) -> ModelObject.Type {
        guard let type = classes[name] else { throw .unknownClass(name) }
        try ModelClassInfo.of(type).checkOptions()
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
