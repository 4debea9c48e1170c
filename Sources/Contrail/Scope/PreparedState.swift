import Foundation

/// A full state's new objects made ready part by part while the state streams in (Protocol
/// §8.25), so that applying it at the end does less: each `add` of a registered class the scope
/// does not hold gets a fresh object, with its plain values (not references, collections or shared
/// texts) decoded and set on it. Nothing of it is in the scope or visible to the app: the objects
/// are detached until ``Scope/applyState(rootUUID:fragments:redirect:prepared:)`` takes them,
/// and it takes one only where it would have created that object itself, else it decodes the
/// fragment as usual. A value that does not decode is left for the apply, which refuses the state.
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

    private(set) var entries: [UUID: Entry] = [:]

    /// Prepares the objects `fragments` add, the first at `offset` in the state. O(fragments).
    mutating func prepare(_ fragments: [SyncFragment], offset: Int, in scope: Scope) {
        if entries.isEmpty { entries.reserveCapacity(fragments.count) }
        for (position, fragment) in zip(offset..., fragments) where fragment.kind == .add {
            guard entries[fragment.uuid] == nil, scope.objects[fragment.uuid] == nil, scope.knowsClass(fragment.className),
                  let object = try? ModelRegistry.make(className: fragment.className, uuid: fragment.uuid) else { continue }
            let info = object.info
            var steps: [(name: String, wire: JSON, preset: Preset?)] = []
            steps.reserveCapacity(fragment.properties.count)
            for (name, wire) in fragment.properties.sorted(by: { $0.key < $1.key }) {
                steps.append((name, wire, preset(wire, named: name, of: object, info: info, fragment: fragment)))
            }
            entries[fragment.uuid] = Entry(object: object, position: position, steps: steps)
        }
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
        object.setValue(value, at: index)
        return Preset(index: index, old: old, new: value)
    }

    /// The prepared entry of the fragment at `position` whose object is `object`, if any.
    func entry(at position: Int, for object: ModelObject) -> Entry? {
        guard let entry = entries[object.uuid], entry.position == position, entry.object === object else { return nil }
        return entry
    }

    /// The prepared object of `uuid`, of class `className`.
    func object(_ uuid: UUID, className: String) -> ModelObject? {
        guard let object = entries[uuid]?.object, object.className == className else { return nil }
        return object
    }
}
