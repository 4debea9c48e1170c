import Foundation

/// One object, one scope: an object linked into a scope while it belongs to another one moves,
/// with everything below it.
extension ModelObject {
    /// Takes `movers` (members of scopes other than `target`) and everything below them out of
    /// their scopes. Every synced reference that a member of an old scope, outside the moving
    /// objects, holds to one of them is removed, as the app's own set would (observers hear it, the
    /// old scope records the holder's change); a moving root leaves its scope without a root; then
    /// the moving objects detach (detach events). A non-optional reference cannot be removed: an
    /// object held by one stays in its scope. O(moving objects + their parents), plus the sets.
    static func leaveOtherScopes(_ movers: [ModelObject], for target: Scope) {
        var moving: [(object: ModelObject, scope: Scope)] = []
        var ids = Set<ObjectIdentifier>()
        var stack = movers
        while let object = stack.popLast() {
            guard let scope = object.scope, scope !== target, ids.insert(ObjectIdentifier(object)).inserted else { continue }
            moving.append((object, scope))
            stack.append(contentsOf: object.syncedChildObjects)
        }
        var cuts: [(holder: ModelObject, property: Int, object: ModelObject)] = []
        var rootless: [Scope] = []
        for (object, scope) in moving {
            if scope.root === object { rootless.append(scope) }
            for link in object.tracking.parents {
                guard let holder = link.parent, holder.scope === scope, !ids.contains(ObjectIdentifier(holder)),
                      holder.info.properties[link.property].isSynced else { continue }
                cuts.append((holder, link.property, object))
            }
        }
        for cut in cuts { cut.holder.removeReferences(to: cut.object, at: cut.property) }
        for scope in rootless { scope.root = nil }
        // What was held only from inside the moving objects leaves with them.
        var remaining: [ObjectIdentifier: (scope: Scope, objects: [ModelObject])] = [:]
        for (object, scope) in moving where object.scope === scope {
            remaining[ObjectIdentifier(scope), default: (scope, [])].objects.append(object)
        }
        for (scope, objects) in remaining.values { detachUnreachable(objects, from: scope) }
    }

    /// Removes every reference to `object` from property `index` through the setter's path (notified
    /// and recorded like an app's set). An optional reference becomes nil; a collection loses each
    /// occurrence; a non-optional reference cannot let go and is left as it is. O(property's models).
    private func removeReferences(to object: ModelObject, at index: Int) {
        let property = info.properties[index]
        var others: [UUID: ModelObject] = [:]
        for model in property.storage.models(in: self, offset: property.offset) where model !== object {
            others[model.uuid] = model
        }
        let reference = object.wireValue()
        let without: JSON
        switch property.storage.wireValue(in: self, offset: property.offset) {
        case .array(let items): without = .array(items.filter { $0 != reference })
        case reference: without = .null
        default: return
        }
        guard let value = try? info.decode(without, at: index, resolver: { others[$0] }) else { return }
        setValue(value, at: index)
    }
}
