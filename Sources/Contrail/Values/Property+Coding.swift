import Foundation

/// The wire side of a `@Property`'s type-erased storage: how the scope, the log and the sync layer
/// read and write properties as wire values. Every `PropertyStorage` is one (`Property` is the
/// only conformer); `ModelClassInfo.coder(at:)` finds a property's once per class.
@MainActor
protocol PropertyCoding: PropertyStorage {
    /// The current wire value.
    static func wireValue(in object: ModelObject, offset: Int) -> JSON
    /// Decodes a wire value without touching the object (validation before any change).
    static func decode(_ wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> Any
    /// The wire value of a boxed value of this property's type.
    static func wireValue(of value: Any) -> JSON
}

extension Property: PropertyStorage, PropertyCoding {
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

    static var isModelList: Bool { Value.self is any ModelList.Type }

    static func modelList(_ models: [ModelObject], checkingFrom start: Int) -> Any? {
        (Value.self as? any ModelList.Type)?.value(of: models, checkingFrom: start)
    }

    static func models(of value: Any) -> [ModelObject] {
        Value.valueKind == .value ? [] : (value as? Value)?.models ?? []
    }

    static func restore(_ value: Any, in object: ModelObject, offset: Int) {
        guard let old = value as? Value else { return }
        withStorage(object, offset) { $0.pointee.value = old }
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
        var new = new
        // A decoded or replayed shared text edits the text it is stored over (§8.21).
        if Value.self == SharedText.self, let text = new as? SharedText, text.update != nil,
           let current = withStorage(object, offset, { $0.pointee.value }) as? SharedText,
           let merged = text.stored(over: current) as? Value {
            new = merged
        }
        let old = withStorage(object, offset) { storage in
            let old = storage.pointee.value
            storage.pointee.value = new
            return old
        }
        object._didChange(index: index, old: old, new: new)
    }
}


/// The coders of a class's properties, made once per class and kept on its `ModelClassInfo`.
@MainActor
final class PropertyCoders {
    let coders: [any PropertyCoding.Type]

    init(_ info: ModelClassInfo) {
        // Every storage is a `Property<Value: PropertyValue>`, which is a `PropertyCoding`.
        coders = info.properties.map { $0.storage as! any PropertyCoding.Type }
    }
}

extension ModelClassInfo {
    /// The wire side of property `index`'s storage. O(1) after the class's first call.
    func coder(at index: Int) -> any PropertyCoding.Type {
        if let cached = derived { return unsafeDowncast(cached, to: PropertyCoders.self).coders[index] }
        let made = PropertyCoders(self)
        derived = made
        return made.coders[index]
    }
}

extension PropertyDescriptor {
    /// The wire side of the property's storage (a conformance lookup: call once per class, or use
    /// `ModelClassInfo.coder(at:)`, which caches it).
    var coding: any PropertyCoding.Type { storage as! any PropertyCoding.Type }
}
