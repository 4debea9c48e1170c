import Foundation

/// Applying fragments and full states that come from elsewhere.
extension Scope {
    /// Runs `body` without recording: what it changes produces no outgoing fragments.
    func applyingRemote(_ body: () -> Void) {
        remoteDepth += 1
        defer { remoteDepth -= 1 }
        body()
    }

    /// Whether changes are currently being applied from elsewhere (nothing is recorded).
    public var isApplyingRemote: Bool { remoteDepth > 0 }

    /// Applies fragments received from elsewhere. Objects are created by class name, references to
    /// objects added in the same batch resolve in any order, observers fire as for local changes,
    /// and nothing is recorded as outgoing. The whole batch is validated before anything changes:
    /// a bad batch throws and leaves the tree as it was. Unknown properties and changes to unknown
    /// objects are skipped and reported.
    @discardableResult
    public func apply(_ fragments: [SyncFragment]) throws(ModelError) -> ApplyReport {
        try apply(fragments, applyDefaults: false)
    }

    /// `redirect`, when given, sees every write first: it returns the value to store (maybe the
    /// remote one, maybe a merge) or nil to leave the property alone (a key a pending local change
    /// set holds, Protocol §8.3).
    func apply(_ fragments: [SyncFragment], applyDefaults: Bool,
               redirect: ((ModelObject, Int, Any) -> Any?)? = nil) throws(ModelError) -> ApplyReport {
        var report = ApplyReport()
        // Pass 1: find or create every added object.
        var created: [UUID: ModelObject] = [:]
        for fragment in fragments where fragment.kind == .add {
            if objects[fragment.uuid] != nil || created[fragment.uuid] != nil { continue }
            if let held = retired[fragment.uuid]?.object, held.className == fragment.className, held.scope == nil {
                created[fragment.uuid] = held
                continue
            }
            created[fragment.uuid] = try ModelRegistry.make(className: fragment.className, uuid: fragment.uuid)
        }
        let resolver: ModelResolver = { [objects] uuid in created[uuid] ?? objects[uuid] }
        // Pass 2: decode every value (validation; nothing changes yet).
        var writes: [(ModelObject, Int, Any)] = []
        for fragment in fragments {
            guard let object = resolver(fragment.uuid) else {
                report.unknownObjects.append(fragment.uuid)
                continue
            }
            let info = object.info
            for (name, wire) in fragment.properties.sorted(by: { $0.key < $1.key }) {
                guard let index = info.indexByName[name], info.properties[index].isSynced else {
                    report.unknownProperties.append("\(object.className).\(name)")
                    continue
                }
                writes.append((object, index, try info.decode(wire, at: index, resolver: resolver)))
            }
            if applyDefaults {
                for property in info.properties where property.isSynced && fragment.properties[property.name] == nil {
                    writes.append((object, property.index, property.storage.value(in: info.probe, offset: property.offset)))
                }
            }
            report.appliedFragments += 1
        }
        // Pass 3: apply.
        var changes: [ChangeSet.Change] = []
        applyingRemote {
            for (object, index, remote) in writes {
                guard let value = redirect.map({ $0(object, index, remote) }) ?? remote else { continue }
                let old = object.value(at: index)
                object.setValue(value, at: index)
                changes.append(ChangeSet.Change(object: object, property: index, old: old, new: value))
            }
        }
        if report.appliedFragments > 0 {
            publish(ChangeSet(fragments: fragments, changes: changes, message: nil, isAtomic: false,
                              origin: .remote, state: .completed, scope: self))
        }
        return report
    }

    /// Applies a full state (Protocol §3.4): the root takes over `rootUUID`, properties a fragment
    /// leaves out get their defaults, objects the state does not mention leave the tree with the
    /// last reference to them, and the minimum-sync-interval timestamps start afresh.
    @discardableResult
    public func applyState(rootUUID: UUID, fragments: [SyncFragment]) throws(ModelError) -> ApplyReport {
        try applyState(rootUUID: rootUUID, fragments: fragments, redirect: nil)
    }

    /// `applyState` with a `redirect` as in `apply(_:applyDefaults:redirect:)`.
    func applyState(rootUUID: UUID, fragments: [SyncFragment],
                    redirect: ((ModelObject, Int, Any) -> Any?)?) throws(ModelError) -> ApplyReport {
        guard root != nil else { return ApplyReport() }
        flush()
        adoptRootUUID(rootUUID)
        let report = try apply(fragments, applyDefaults: true, redirect: redirect)
        // A full state starts afresh: the next edit of a throttled property goes out at once (one
        // already deferred still goes out when its interval ends).
        lastRecorded.removeAll()
        throttled.removeAll()
        // Every object the state mentions got every property (defaults where left out), so an object
        // it does not mention is detached once nothing points at it, unless a pending local change
        // set still holds the key that does (its value stays until the server settles it).
        return report
    }

    /// The root takes over `uuid` (the server's or the log's root identity).
    func adoptRootUUID(_ uuid: UUID) {
        guard let root, root.uuid != uuid else { return }
        objects[root.uuid] = nil
        root.uuid = uuid
        objects[uuid] = root
        queryHub?.changed(root)  // its uuid orders it among equal keys
    }
}
