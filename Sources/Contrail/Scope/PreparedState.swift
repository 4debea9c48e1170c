import Foundation

/// A full state's new objects made ready part by part while the state streams in (Protocol
/// §8.25), so that applying it at the end does less: each `add` of a registered class the scope
/// does not hold gets a fresh object, with its plain values (not references, collections or shared
/// texts) decoded and stored in it, without notifying: nobody can observe it yet. Nothing of it is
/// in the scope or visible to the app: the objects are detached until
/// ``Scope/applyState(rootUUID:fragments:redirect:prepared:)`` takes them, and it takes one only
/// where it would have created that object itself, else it decodes the fragment as usual. A value
/// that does not decode is left for the apply, which refuses the state.
@MainActor
struct PreparedState {
    /// A plain value set on a prepared object, with the default it replaced.
    struct Preset {
        let index: Int
        let old: Any
        let new: Any
    }

    /// One prepared object: the fragment it came from (its position in the state) and its values.
    struct Entry {
        let object: ModelObject
        let position: Int
        /// The fragment's properties in name order: a preset value, or nil where the apply decodes it.
        let steps: [(name: String, wire: JSON, preset: Preset?)]
    }

    /// The prepared entries by their fragment's position in the state (nil: none), so that the
    /// apply finds a fragment's entry without hashing. A UUID added twice gets two entries; the
    /// apply takes the first, as it would create the first.
    private var byPosition: [Entry?] = []
    /// The class of the last object prepared (a state's objects mostly share a few classes).
    private var lastClass: (name: String, type: ModelObject.Type)?

    /// Ready for a state of about `count` objects (the capacity is reserved once, not grown part by part).
    init(count: Int = 0) {
        byPosition.reserveCapacity(count)
    }

    /// Prepares the objects `fragments` add, the first at `offset` in the state. O(fragments).
    mutating func prepare(_ fragments: [SyncFragment], offset: Int, in scope: Scope) {
        for (position, fragment) in zip(offset..., fragments) where fragment.kind == .add {
            guard scope.objects[fragment.uuid] == nil,
                  let type = modelClass(fragment.className, in: scope) else { continue }
            let object = type.init(uuid: fragment.uuid)
            let info = object.info
            var steps: [(name: String, wire: JSON, preset: Preset?)] = []
            steps.reserveCapacity(fragment.properties.count)
            for (name, wire) in fragment.properties.sorted(by: { $0.key < $1.key }) {
                steps.append((name, wire, preset(wire, named: name, of: object, info: info, fragment: fragment)))
            }
            let entry = Entry(object: object, position: position, steps: steps)
            if byPosition.count <= position { byPosition.append(contentsOf: repeatElement(nil, count: position + 1 - byPosition.count)) }
            byPosition[position] = entry
        }
    }

    /// The model class of `name`, when `scope` knows it.
    private mutating func modelClass(_ name: String, in scope: Scope) -> ModelObject.Type? {
        if let lastClass, lastClass.name == name { return lastClass.type }
        guard scope.knowsClass(name), let type = try? ModelRegistry.modelClass(named: name) else { return nil }
        lastClass = (name, type)
        return type
    }

    /// Decodes and sets plain value `wire` of property `name` on the fresh `object`; nil where the
    /// apply must (an unknown, local, reference, collection or shared-text property, a value that
    /// does not decode).
    private func preset(_ wire: JSON, named name: String, of object: ModelObject, info: ModelClassInfo,
                        fragment: SyncFragment) -> Preset? {
        guard let index = info.indexByName[name] else { return nil }
        let property = info.properties[index]
        guard property.isSynced, property.valueKind == .value, fragment.textOperations?[name] == nil,
              ObjectIdentifier(property.storage) != ObjectIdentifier(Property<SharedText>.self),
              let value = try? info.decode(wire, at: index, resolver: { _ in nil }) else { return nil }
        let old = object.value(at: index)
        // Stored without notifying: nobody can observe an object the app has not seen yet.
        property.storage.restore(value, in: object, offset: property.offset)
        return Preset(index: index, old: old, new: value)
    }

    /// The number of objects prepared. O(fragments).
    var count: Int { byPosition.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// The prepared entry of the fragment at `position` (of the fragments prepared), if any. O(1).
    func entry(at position: Int) -> Entry? {
        position < byPosition.count ? byPosition[position] : nil
    }
}
