import Foundation

/// One object, one host (scope): an object linked into a host while it belongs to another one
/// moves, with everything below it, unless a non-optional reference in its host holds it there.
extension ModelObject {
    /// Why linking `objects` (and what is below them) into `target` must be refused, or nil when it
    /// can go ahead: an object the link would move out of another scope (a member of it, or below
    /// one) is held there by a non-optional synced reference from outside what moves, which
    /// cannot let go. Returns at once when every object is already in `target`. O(the unattached
    /// objects below `objects` + the objects that would move + their parents).
    static func refusalToLink(_ objects: some Collection<ModelObject>, into target: ModelObjectHost) -> ScopeMembershipError? {
        if objects.allSatisfy({ $0._tracking?.host === target }) { return nil }
        var movers: [ModelObject] = []
        var unattached = Set<ObjectIdentifier>()
        var stack = Array(objects)
        while let object = stack.popLast() {
            if let scope = object.host {
                if scope !== target { movers.append(object) }
                continue
            }
            // Only objects with children can close a cycle: a new leaf costs no set insertion.
            let children = object.syncedChildObjects
            if !children.isEmpty, unattached.insert(ObjectIdentifier(object)).inserted { stack.append(contentsOf: children) }
        }
        guard !movers.isEmpty else { return nil }
        let (moving, ids) = movingSubtrees(of: movers, for: target)
        for (object, scope) in moving {
            for (holder, property) in holdersOutside(ids, of: object, in: scope) {
                let descriptor = holder.info.properties[property]
                guard descriptor.valueKind == .reference, !descriptor.storage.isOptional else { continue }
                return .heldByNonOptionalReference(object: object.uuid, className: object.className, scope: scope.hostName,
                                                   holder: holder.uuid, property: descriptor.name)
            }
        }
        return nil
    }

    /// Takes `movers` (members of scopes other than `target`) and everything below them out of
    /// their scopes. Every synced reference that a member of an old scope, outside the moving
    /// objects, holds to one of them is removed, as the app's own set would (observers hear it, the
    /// old scope records the holder's change); a moving root leaves its scope without a root; then
    /// the moving objects detach (detach events). The caller checks `refusalToLink` first: no
    /// non-optional reference holds what moves. O(moving objects + their parents), plus the sets.
    static func leaveOtherScopes(_ movers: [ModelObject], for target: ModelObjectHost) {
        let (moving, ids) = movingSubtrees(of: movers, for: target)
        var cuts: [(holder: ModelObject, property: Int, object: ModelObject)] = []
        var rootless: [ModelObjectHost] = []
        for (object, scope) in moving {
            if scope.hostRoot === object { rootless.append(scope) }
            for (holder, property) in holdersOutside(ids, of: object, in: scope) { cuts.append((holder, property, object)) }
        }
        for cut in cuts { cut.holder.removeReferences(to: cut.object, at: cut.property) }
        for scope in rootless { scope.hostRoot = nil }
        // What was held only from inside the moving objects leaves with them.
        var remaining: [ObjectIdentifier: (scope: ModelObjectHost, objects: [ModelObject])] = [:]
        for (object, scope) in moving where object.host === scope {
            remaining[ObjectIdentifier(scope), default: (scope, [])].objects.append(object)
        }
        for (scope, objects) in remaining.values { detachUnreachable(objects, from: scope) }
    }

    /// The members of other scopes than `target` under `movers` (included), each with its scope,
    /// and their identities. O(those objects).
    private static func movingSubtrees(of movers: [ModelObject], for target: ModelObjectHost) -> (moving: [(object: ModelObject, scope: ModelObjectHost)], ids: Set<ObjectIdentifier>) {
        var moving: [(object: ModelObject, scope: ModelObjectHost)] = []
        var ids = Set<ObjectIdentifier>()
        var stack = movers
        while let object = stack.popLast() {
            guard let scope = object.host, scope !== target, ids.insert(ObjectIdentifier(object)).inserted else { continue }
            moving.append((object, scope))
            stack.append(contentsOf: object.syncedChildObjects)
        }
        return (moving, ids)
    }

    /// The members of `scope` outside `ids` that hold `object` through a synced property, with
    /// that property's index. O(object's parents).
    private static func holdersOutside(_ ids: Set<ObjectIdentifier>, of object: ModelObject, in scope: ModelObjectHost) -> [(holder: ModelObject, property: Int)] {
        object.tracking.parents.compactMap { link in
            guard let holder = link.parent, holder.host === scope, !ids.contains(ObjectIdentifier(holder)),
                  holder.info.properties[link.property].isSynced else { return nil }
            return (holder, link.property)
        }
    }

    /// Removes every reference to `object` from property `index` through the setter's path (notified
    /// and recorded like an app's set). An optional reference becomes nil; a collection loses each
    /// occurrence (a non-optional reference cannot let go: `refusalToLink` keeps it from coming
    /// here). O(property's models).
    private func removeReferences(to object: ModelObject, at index: Int) {
        let property = info.properties[index]
        guard let value = property.storage.value(in: self, offset: property.offset, without: object) else { return }
        setValue(value, at: index)
    }
}
