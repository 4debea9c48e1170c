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
    /// a bad batch throws and leaves the tree as it was. Changes to unknown objects are skipped and
    /// reported. What the app does not understand is kept, not dropped (Protocol §8.23): objects of
    /// classes no model class is registered for are held as they are (`unknownObjects`), values of
    /// properties a class does not declare stay with their object (`unknownValues(of:)`), and a
    /// reference or collection that holds unknown objects shows the app the known part only.
    @discardableResult
    public func apply(_ fragments: [SyncFragment]) throws(ModelError) -> ApplyReport {
        try apply(fragments, applyDefaults: false)
    }

    /// `redirect`, when given, sees every write first: it returns the value to store (maybe the
    /// remote one, maybe a merge) or nil to leave the property alone (a key a pending local change
    /// set holds, Protocol §8.3). With `applyDefaults` (a full state), properties a fragment leaves
    /// out take their defaults and unknown objects the batch does not hold are forgotten.
    /// `prepared`: objects made ready while a full state arrived (``PreparedState``), taken where
    /// this would create the same objects. `also`: further writes, made from the objects the batch
    /// adds and those here (its resolver), applied after the fragments' (a restored record's
    /// collection edits, `restorePending`).
    func apply(_ fragments: [SyncFragment], applyDefaults: Bool,
               redirect: ((ModelObject, Int, Any) -> Any?)? = nil, publishes: Bool = true,
               prepared: PreparedState? = nil,
               also: (@MainActor (ModelResolver) throws(ModelError) -> [(ModelObject, Int, Any)])? = nil) throws(ModelError) -> ApplyReport {
        var report = ApplyReport()
        // Pass 1: find or create every added object; objects of unknown classes are only noted.
        var created: [UUID: ModelObject] = [:]
        created.reserveCapacity(fragments.count)
        var unknownAdded: [UUID: String] = [:]
        // The positions whose prepared object was taken: their fragments need no lookup below.
        var taken: [Bool] = prepared == nil ? [] : Array(repeating: false, count: fragments.count)
        for (position, fragment) in fragments.enumerated() where fragment.kind == .add {
            if objects[fragment.uuid] != nil || created[fragment.uuid] != nil { continue }
            if !retired.isEmpty, let held = retired[fragment.uuid]?.object, held.className == fragment.className, held.scope == nil {
                created[fragment.uuid] = held
                continue
            }
            // A prepared object is of a class the registry knew when its part came (a class is
            // never unregistered); a scope told to treat some classes as unknown asks again.
            if let entry = prepared?.entry(at: position), entry.object.uuid == fragment.uuid,
               unknownClassNames.isEmpty || knowsClass(fragment.className) {
                created[fragment.uuid] = entry.object
                taken[position] = true
                continue
            }
            guard knowsClass(fragment.className) else {
                unknownAdded[fragment.uuid] = fragment.className
                continue
            }
            created[fragment.uuid] = try ModelRegistry.make(className: fragment.className, uuid: fragment.uuid)
        }
        // Reads the table (not a copy of it), so that the inserts below do not copy it whole.
        let resolver: ModelResolver = { [unowned self] uuid in created[uuid] ?? objects[uuid] }
        let isUnknown: (UUID) -> Bool = { [unknown] uuid in unknownAdded[uuid] != nil || unknown.objects[uuid] != nil }
        let mayHideReferences = !unknownAdded.isEmpty || !unknown.objects.isEmpty
        // Pass 2: decode every value (validation; nothing changes yet).
        // A write of a prepared object carries the default it replaced: it is already set.
        var writes: [(ModelObject, Int, Any, preset: Any?)] = []
        writes.reserveCapacity(fragments.count)
        var kept: [(uuid: UUID, name: String, value: JSON?)] = []
        var unknownWrites: [(uuid: UUID, className: String, properties: [String: JSON])] = []
        for (position, fragment) in fragments.enumerated() {
            let entry = taken.isEmpty || !taken[position] ? nil : prepared?.entry(at: position)
            guard let object = entry?.object ?? resolver(fragment.uuid) else {
                if isUnknown(fragment.uuid) {
                    unknownWrites.append((fragment.uuid, fragment.className, fragment.properties))
                    report.appliedFragments += 1
                } else {
                    report.unknownObjects.append(fragment.uuid)
                }
                continue
            }
            let info = object.info
            for (name, wire, preset) in entry?.steps ?? fragment.properties.sorted(by: { $0.key < $1.key }).map({ ($0.key, $0.value, PreparedState.Preset?.none) }) {
                if let preset {
                    writes.append((object, preset.index, preset.new, preset.old))
                    continue
                }
                guard let index = info.indexByName[name], info.properties[index].isSynced else {
                    report.unknownProperties.append("\(object.className).\(name)")
                    kept.append((fragment.uuid, name, wire))
                    continue
                }
                var visible = wire
                if info.properties[index].valueKind != .value, mayHideReferences || !unknown.extras.isEmpty {
                    let part = visiblePart(wire, of: info, at: index, isUnknown: isUnknown)
                    visible = part.visible
                    kept.append((fragment.uuid, info.properties[index].name, part.whole))
                }
                // A shared text decodes its operations or state with its plain value (§8.21).
                let member = fragment.textOperations?[name].map { JSON.object(["plain": visible, "text": $0]) }
                writes.append((object, index, try info.decode(member ?? visible, at: index, resolver: resolver), nil))
            }
            if applyDefaults {
                // A shared text the state leaves out keeps its text (its default is one shared handle).
                for property in info.properties where property.isSynced && fragment.properties[property.name] == nil
                    && ObjectIdentifier(property.storage) != ObjectIdentifier(Property<SharedText>.self) {
                    writes.append((object, property.index, property.storage.value(in: info.probe, offset: property.offset), nil))
                }
            }
            report.appliedFragments += 1
        }
        if let also {
            for (object, index, value) in try also(resolver) { writes.append((object, index, value, nil)) }
        }
        // Pass 3: apply (what the app does not understand first: a key a pending local change set
        // holds may then let go of a kept reference, Sync's `redirect`).
        keepUnknown(fragments: fragments, kept: kept, unknownWrites: unknownWrites, isState: applyDefaults)
        var changes: [ChangeSet.Change] = []
        changes.reserveCapacity(writes.count)
        // The objects the batch adds join the scope's table as they attach: grown once, not step by step.
        if !created.isEmpty { objects.reserveCapacity(objects.count + created.count) }
        applyingRemote {
            for (object, index, remote, preset) in writes {
                // A prepared object is fresh: no pending change set holds its keys (redirect passes).
                if let preset {
                    changes.append(ChangeSet.Change(object: object, property: index, old: preset, new: remote))
                    continue
                }
                guard let value = redirect.map({ $0(object, index, remote) }) ?? remote else { continue }
                let old = object.value(at: index)
                object.setValue(value, at: index)
                changes.append(ChangeSet.Change(object: object, property: index, old: old, new: value))
            }
        }
        reconcileUnknown(created: created)
        if report.appliedFragments > 0, publishes {
            publish(ChangeSet(fragments: fragments, changes: changes, message: nil, isAtomic: false,
                              origin: .remote, state: .completed, scope: self))
        }
        return report
    }

    /// Stores what a batch brought that the app does not understand. A full state (`isState`)
    /// replaces it: the unknown objects and values it does not hold are forgotten.
    private func keepUnknown(fragments: [SyncFragment], kept: [(uuid: UUID, name: String, value: JSON?)],
                             unknownWrites: [(uuid: UUID, className: String, properties: [String: JSON])], isState: Bool) {
        if isState, !unknown.isEmpty {
            unknown.objects.removeAll()
            for fragment in fragments { unknown.extras[fragment.uuid] = nil }
        }
        for write in unknownWrites {
            if unknown.objects[write.uuid] == nil {
                unknown.objects[write.uuid] = UnknownState.Record(className: write.className, properties: write.properties)
            } else {
                unknown.objects[write.uuid]?.properties.merge(write.properties) { _, new in new }
            }
        }
        for entry in kept { keepUnknown(entry.name, entry.value, of: entry.uuid) }
    }

    /// Applies a full state (Protocol §3.4): the root takes over `rootUUID`, properties a fragment
    /// leaves out get their defaults, objects the state does not mention leave the tree with the
    /// last reference to them, and the minimum-sync-interval timestamps start afresh.
    @discardableResult
    public func applyState(rootUUID: UUID, fragments: [SyncFragment]) throws(ModelError) -> ApplyReport {
        try applyState(rootUUID: rootUUID, fragments: fragments, redirect: nil)
    }

    /// `applyState` with a `redirect` as in `apply(_:applyDefaults:redirect:)`, and the objects
    /// `prepared` while the state arrived.
    func applyState(rootUUID: UUID, fragments: [SyncFragment],
                    redirect: ((ModelObject, Int, Any) -> Any?)?, prepared: PreparedState? = nil) throws(ModelError) -> ApplyReport {
        guard root != nil else { return ApplyReport() }
        flush()
        adoptRootUUID(rootUUID)
        let report = try apply(fragments, applyDefaults: true, redirect: redirect, prepared: prepared)
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
