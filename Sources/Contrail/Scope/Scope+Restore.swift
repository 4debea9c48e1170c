import Foundation

/// Restoring unacknowledged local change sets from a fragment log.
extension Scope {
    /// Restores a local change set from a fragment log that was still syncing when the log was
    /// written, exactly as it was made: its own fragments, in their order, are what the layer that
    /// settles the scope's change sets sends (so a change set that references an object a later
    /// one adds never goes out before it). Unless `isApplied` (a compacted record, whose values the log's
    /// snapshot already holds), the fragments are applied first, as remote ones (nothing is recorded).
    ///
    /// The returned change set is `syncing`; its originals are the values before it (a collection
    /// with a recorded base takes the base, for the server's three-way merge), so a revert or a
    /// rebase works as for a change set made in this process. It goes to `unsettledRestored` (not to
    /// `onChanges`); the fragment log takes it out again if a later record says it settled.
    /// O(fragments + properties).
    func restorePending(_ fragments: [SyncFragment], message: String?, isAtomic: Bool,
                        isApplied: Bool, id: UUID) throws(ModelError) -> ChangeSet {
        // Originals, read before anything changes; references resolve among the current objects.
        var originals: [(ModelObject, Int, Any)] = []
        for fragment in fragments where fragment.kind == .change {
            guard let object = objects[fragment.uuid] else { continue }
            let info = object.info
            for name in fragment.properties.keys.sorted() {
                guard let index = info.indexByName[name], info.properties[index].isSynced else { continue }
                var old = object.value(at: index)
                if let base = fragment.bases?[name] {
                    let wire = JSON.array(base.filter { objects[$0] != nil }.map { .string($0.uuidString.lowercased()) })
                    if let decoded = try? info.coder(at: index).decode(wire, property: name, resolver: { self.objects[$0] }) {
                        old = decoded
                    }
                }
                originals.append((object, index, old))
            }
        }
        if !isApplied { try apply(fragments) }
        let changes = originals.map { object, index, old in
            ChangeSet.Change(object: object, property: index, old: old, new: object.value(at: index))
        }
        let changeSet = ChangeSet(fragments: fragments, changes: changes, message: message, isAtomic: isAtomic,
                                  origin: .local, state: .syncing, scope: self, id: id)
        history.append(changeSet)
        unsettledRestored.append(changeSet)
        return changeSet
    }

    /// The UUIDs of the models collection property `name` of object `uuid` holds, or nil when the
    /// scope has no such object or property. O(n).
    func collectionElements(_ uuid: UUID, _ name: String) -> [UUID]? {
        guard let object = objects[uuid] ?? (uuid == root?.uuid ? root : nil) else { return nil }
        let info = object.info
        guard let index = info.indexByName[name] else { return nil }
        return info.properties[index].storage.models(of: object.value(at: index)).map(\.uuid)
    }

    /// Makes room for `additional` more attached objects (a restore about to attach them). O(objects).
    func reserveObjects(_ additional: Int) {
        objects.reserveCapacity(objects.count + additional)
    }
}
