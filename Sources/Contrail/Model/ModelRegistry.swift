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
    /// Classes by the wire names they had before (`previousWireNames`); a current name wins.
    private static var previousNames: [String: ModelObject.Type] = [:]
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
        guard let type = classes[name] ?? previousNames[name] else { throw .unknownClass(name) }
        try ModelClassInfo.of(type).checkOptions()
        return type
    }

    /// Whether a class is registered under `name` (its wire name or one of its `previousWireNames`).
    /// A scope keeps objects of any other class as they are, without making them (issue 26).
    public static func isRegistered(_ name: String) -> Bool {
        classes[name] != nil || previousNames[name] != nil
    }

    /// A new instance of the class registered under `className`, with the given UUID.
    public static func make(className: String, uuid: UUID) throws(ModelError) -> ModelObject {
        try modelClass(named: className).init(uuid: uuid)
    }

    /// Whether a registered class has a `modelVersion` other than 0 (until one has, a fragment log
    /// records no versions and migrates nothing).
    static private(set) var hasModelVersions = false

    static func registerReachable(from info: ModelClassInfo) {
        classes[info.className] = info.type
        if info.type.modelVersion != 0 { hasModelVersions = true }
        for name in info.type.previousWireNames where name != info.className { previousNames[name] = info.type }
        for property in info.properties {
            for type in property.storage.modelTypes where classes[type.className] == nil {
                _ = ModelClassInfo.of(type)
            }
        }
    }
}
