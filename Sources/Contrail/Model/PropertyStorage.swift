import Foundation

/// Type-erased access to a `Property<Value>` stored inside a model object, found by field offset.
/// This is how the scope reads and writes properties by wire name without key paths.
@MainActor
protocol PropertyStorage {
    static var valueKind: PropertyValueKind { get }
    static var typeName: String { get }
    static var modelTypes: [ModelObject.Type] { get }
    static func wireValue(in object: ModelObject, offset: Int) -> JSON
    static func models(in object: ModelObject, offset: Int) -> [ModelObject]
    /// The model objects a boxed value of this property's type holds.
    static func models(of value: Any) -> [ModelObject]
    /// Decodes a wire value without touching the object (validation before any change).
    static func decode(_ wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Any
    /// Stores a value made by `decode` (or read by `value(in:offset:)`) and notifies as a local set does.
    static func store(_ value: Any, in object: ModelObject, offset: Int, index: Int)
    /// The current value, boxed.
    static func value(in object: ModelObject, offset: Int) -> Any
    /// The current value without any reference to `model`, boxed: nil for an optional reference
    /// to it, the other elements of a collection; nil when nothing refers to it or it cannot let go.
    static func value(in object: ModelObject, offset: Int, without model: ModelObject) -> Any?
    /// Whether a wire null decodes: an optional (or a floating-point number, which reads it as NaN).
    static var isOptional: Bool { get }
    /// The wire value of a boxed value of this property's type.
    static func wireValue(of value: Any) -> JSON
}

extension Property: PropertyStorage {
    static var valueKind: PropertyValueKind { Value.valueKind }
    static var typeName: String { Value.typeName }
    static var modelTypes: [ModelObject.Type] { Value.modelTypes }

    private static func withStorage<R>(_ object: ModelObject, _ offset: Int, _ body: (UnsafeMutablePointer<Property<Value>>) -> R) -> R {
        withExtendedLifetime(object) {
            let base = Unmanaged.passUnretained(object).toOpaque()
            return body((base + offset).assumingMemoryBound(to: Property<Value>.self))
        }
    }

    static func wireValue(in object: ModelObject, offset: Int) -> JSON {
        withStorage(object, offset) { $0.pointee.value.wireValue() }
    }

    static func models(in object: ModelObject, offset: Int) -> [ModelObject] {
        Value.valueKind == .value ? [] : withStorage(object, offset) { $0.pointee.value.models }
    }

    static func models(of value: Any) -> [ModelObject] {
        Value.valueKind == .value ? [] : (value as? Value)?.models ?? []
    }

    static func decode(_ wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Any {
        try Value.decode(wire: wire, property: property, resolver: resolver)
    }

    static func wireValue(of value: Any) -> JSON {
        (value as? Value)?.wireValue() ?? .null
    }

    static func value(in object: ModelObject, offset: Int) -> Any {
        withStorage(object, offset) { $0.pointee.value }
    }

    static var isOptional: Bool { (try? Value.decode(wire: .null, property: "", resolver: { _ in nil })) != nil }

    static func value(in object: ModelObject, offset: Int, without model: ModelObject) -> Any? {
        // Through the wire form: the one way to build a `Value` with fewer models in it.
        var others: [UUID: ModelObject] = [:]
        for held in models(in: object, offset: offset) where held !== model { others[held.uuid] = held }
        let reference = model.wireValue()
        let without: JSON
        switch wireValue(in: object, offset: offset) {
        case .array(let items): without = .array(items.filter { $0 != reference })
        case reference: without = .null
        default: return nil
        }
        return try? Value.decode(wire: without, property: "", resolver: { others[$0] })
    }

    static func store(_ value: Any, in object: ModelObject, offset: Int, index: Int) {
        guard let new = value as? Value else { return }
        store(typed: new, in: object, offset: offset, index: index)
    }

    /// Stores `new` and notifies as a local set does, without boxing: what a log restore calls
    /// for the value types it decodes itself.
    @MainActor static func store(typed new: Value, in object: ModelObject, offset: Int, index: Int) {
        let old = withStorage(object, offset) { storage in
            let old = storage.pointee.value
            storage.pointee.value = new
            return old
        }
        object._didChange(index: index, old: old, new: new)
    }
}
