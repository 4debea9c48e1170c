import ContrailSupport
import ContrailWire
import Foundation

extension ScopeStore {
    /// The whole tree as fragments for `ScopeState` (§3.4): pre-order from the root, the root as
    /// `change`, every other object once as `add`, null single references left out.
    func stateFragments() -> [SyncFragment] {
        stateOrder().map(stateFragment)
    }

    /// The UUIDs of the state's objects in pre-order (the root first), each once: the order of
    /// ``stateFragments()``. O(objects), without building a fragment.
    func stateOrder() -> [UUID] {
        var order: [UUID] = []
        order.reserveCapacity(objects.count)
        var seen: Set<UUID> = []
        seen.reserveCapacity(objects.count)
        var stack: [UUID] = [rootUUID]
        var children: [UUID] = []
        while let uuid = stack.popLast() {
            guard objects.contains(uuid), seen.insert(uuid).inserted else { continue }
            order.append(uuid)
            children.removeAll(keepingCapacity: true)
            forEachReference(of: uuid) { children.append($0) }
            stack.append(contentsOf: children.reversed())
        }
        return order
    }

    /// The state's fragment of object `uuid` (one of ``stateOrder()``): an `add`, the root's a
    /// `change`, with every property but references left null. O(properties).
    func stateFragment(_ uuid: UUID) -> SyncFragment {
        let className = objects.className(of: uuid) ?? ""
        var properties = objects.properties(of: uuid) ?? [:]
        for (key, value) in properties where value.isNull {
            if kinds[KindKey(className: className, property: key)] == .reference { properties[key] = nil }
        }
        let texts = objects.texts(of: uuid)
        return SyncFragment(kind: uuid == rootUUID ? .change : .add, uuid: uuid, className: className,
                            properties: properties, textOperations: texts.isEmpty ? nil : texts)
    }

    /// Encodes the state in parts (§8.25) and supplies each, as soon as it is written, to the
    /// produced stream `id` of `outbox`; stops early when the stream is gone. Runs off the scope's
    /// actor, on a snapshot (this copy of the store). O(objects).
    func stream(to outbox: SessionOutbox, as id: StateStream.ID, maxObjects: Int, maxBytes: Int) {
        let order = stateOrder()
        var going = true
        ScopeStateChunk.forEachPart(of: order.lazy.map(stateFragment), maxObjects: maxObjects, maxBytes: maxBytes) { part in
            going = outbox.supply(part, total: order.count, finished: part.offset + part.count == order.count, to: id)
            return going
        }
        if going, order.isEmpty { _ = outbox.supply(nil, total: 0, finished: true, to: id) }
        // Encoding a big state allocated and freed several times what the store holds (fragments,
        // dictionaries, the writer's buffer): their pages go back to the system.
        if order.count >= ScopePersistence.releaseAfterObjects { Platform.releaseFreeMemory() }
    }

    /// The fragments that bring a replica holding `old` to this state, in the order of
    /// ``stateFragments()``: an `add` of every object `old` lacks, a `change` (with all its
    /// properties) of every object whose class or properties differ. Objects only `old` holds are
    /// left to the changed references that no longer reach them. O(objects).
    func fragments(changedSince old: ScopeStore) -> [SyncFragment] {
        stateFragments().compactMap { fragment in
            guard let object = objects[fragment.uuid] else { return nil }
            guard let before = old.objects[fragment.uuid] else {
                return fragment.uuid == rootUUID ? fragment : SyncFragment(kind: .add, uuid: fragment.uuid,
                                                                           className: fragment.className, properties: fragment.properties,
                                                                           textOperations: fragment.textOperations)
            }
            guard before != object else { return nil }
            return SyncFragment(kind: .change, uuid: fragment.uuid, className: object.className, properties: object.properties,
                                textOperations: object.texts.isEmpty ? nil : object.texts)
        }
    }

    /// The state as `{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}`, the shape of
    /// `Scope.stateJSON()`; with `texts`, each object with shared texts also has their states
    /// under `"text"` (the snapshot's shape).
    func stateJSON(texts: Bool = false) -> JSON {
        var members: [String: JSON] = [:]
        members.reserveCapacity(objects.count)
        for (uuid, object) in objects {
            var entry: [String: JSON] = ["clsName": .string(object.className), "properties": .object(object.properties)]
            if texts, !object.texts.isEmpty { entry["text"] = .object(object.texts) }
            members[uuid.wireString] = .object(entry)
        }
        return .object(["root": .string(rootUUID.wireString), "objects": .object(members)])
    }

    /// The snapshot record persisted in the scope's log: the state plus the learnt kinds, the ids of
    /// the change sets applied last and the last state of the objects deleted last (oldest first).
    func snapshotJSON(name: String) -> JSON {
        var kindMembers: [String: JSON] = [:]
        for (key, kind) in kinds {
            var perClass = kindMembers[key.className]?.objectValue ?? [:]
            perClass[key.property] = .string(kind.rawValue)
            kindMembers[key.className] = .object(perClass)
        }
        guard case .object(var members) = stateJSON(texts: true) else { return .null }
        members["name"] = .string(name)
        members["kinds"] = .object(kindMembers)
        members["changeSets"] = .array(applied.ids.map { .string($0.wireString) })
        if sequence > 0 { members["seq"] = .int(Int64(sequence)) }
        if !revisions.isEmpty { members["revisions"] = .array(revisions.map(\.json)) }
        if deleted.count > 0 {
            // [uuid, class, properties(, shared text states)]: a revived object keeps its texts' characters.
            members["deleted"] = .array(deleted.all.map { uuid, object in
                .array([.string(uuid.wireString), .string(object.className), .object(object.properties)]
                    + (object.texts.isEmpty ? [] : [.object(object.texts)]))
            })
        }
        return .object(members)
    }

    /// Restores a store from ``snapshotJSON(name:)``; nil if the record has another shape.
    init?(snapshot: JSON) {
        guard case .string(let rootText)? = snapshot["root"], let root = UUID(wireString: rootText),
              case .object(let objectMembers)? = snapshot["objects"] else { return nil }
        var kinds: [KindKey: PropertyKind] = [:]
        if case .object(let classes)? = snapshot["kinds"] {
            for (className, perClass) in classes {
                guard case .object(let properties) = perClass else { return nil }
                for (property, kindValue) in properties {
                    guard case .string(let text) = kindValue, let kind = PropertyKind(rawValue: text) else { return nil }
                    kinds[KindKey(className: className, property: property)] = kind
                }
            }
        }
        self.init(rootUUID: root, kinds: kinds)
        reserveCapacity(objectMembers.count)
        for (uuidText, value) in objectMembers {
            guard let uuid = UUID(wireString: uuidText), case .string(let className)? = value["clsName"],
                  case .object(let properties)? = value["properties"] else { return nil }
            hold(StoredObject(className: className, properties: properties, texts: value["text"]?.objectValue ?? [:]), as: uuid)
        }
        shrinkToFit()
        if case .array(let changeSets)? = snapshot["changeSets"] {
            for case .string(let text) in changeSets { if let id = UUID(wireString: text) { rememberApplied(id) } }
        }
        if let value = snapshot["seq"]?.int64Value, value > 0 { restoreSequence(Int(value)) }
        if case .array(let entries)? = snapshot["revisions"] {
            for entry in entries {
                guard let revision = ScopeRevision(json: entry) else { return nil }
                mark(revision)
            }
        }
        if case .array(let entries)? = snapshot["deleted"] {
            for case .array(let entry) in entries {
                guard entry.count == 3 || entry.count == 4, case .string(let uuidText) = entry[0], let uuid = UUID(wireString: uuidText),
                      case .string(let className) = entry[1], case .object(let properties) = entry[2] else { return nil }
                let texts = entry.count == 4 ? entry[3].objectValue : [:]
                guard let texts else { return nil }
                rememberDeleted(uuid, StoredObject(className: className, properties: properties, texts: texts))
            }
        }
    }
}
