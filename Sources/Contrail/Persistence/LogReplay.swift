import Foundation

/// Applies a fragment log's records to a scope on restore: what `Scope.apply` does for remote
/// fragments (objects created by class name, references resolved within the batch in any order,
/// the whole batch decoded before anything changes, nothing recorded as outgoing), without what a
/// restore does not need: no change set is built or published, no old values are kept, and
/// properties are not sorted. Observers of the models fire as for any set.
@MainActor
enum LogReplay {
    /// Applies `fragments` to `scope`. Changes to unknown objects and unknown properties are
    /// skipped; a value of the wrong type or an unknown class throws and changes nothing.
    /// O(fragments + properties).
    static func apply(_ fragments: [SyncFragment], to scope: Scope) throws(ModelError) {
        var created: [UUID: ModelObject] = [:]
        for fragment in fragments where fragment.kind == .add {
            if scope.object(for: fragment.uuid) != nil || created[fragment.uuid] != nil { continue }
            created[fragment.uuid] = try ModelRegistry.make(className: fragment.className, uuid: fragment.uuid)
        }
        let resolver: ModelResolver = { uuid in created[uuid] ?? scope.object(for: uuid) }
        var writes: [(ModelObject, Int, Any)] = []
        writes.reserveCapacity(fragments.count)
        for fragment in fragments {
            guard let object = resolver(fragment.uuid) else { continue }
            let info = object.info
            for (name, wire) in fragment.properties {
                guard let index = info.indexByName[name], info.properties[index].isSynced else { continue }
                writes.append((object, index, try info.properties[index].storage.decode(wire, property: name, resolver: resolver)))
            }
        }
        scope.applyingRemote {
            for (object, index, value) in writes { object.setValue(value, at: index) }
        }
    }
}
