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
    ///
    /// `typed`: chained collection edits the log left out of `fragments` (``ChainedCollectionEdit``),
    /// applied here to the typed collections with the fragments: an append adds its models to the
    /// array (O(edit), plus the copy of the array the set makes and one pass of pointer compares),
    /// any other edit rebuilds the models from their UUIDs (O(n)); the change keeps its versions
    /// chained on the previous record's, without a wire value. An edit that inserts an element
    /// that is neither a model here nor one the record adds (an unknown class, §8.23) goes into its
    /// fragment whole instead, and its `fallback` says so.
    /// O(fragments + properties + edits).
    func restorePending(_ fragments: [SyncFragment], typed: inout [ChainedCollectionEdit], message: String?, isAtomic: Bool,
                        isApplied: Bool, id: UUID) throws(ModelError) -> ChangeSet {
        var fragments = fragments
        var typedOld: [(object: ModelObject, index: Int, old: Any, edit: Int)] = []
        if !typed.isEmpty {
            let added = Set(fragments.lazy.filter { $0.kind == .add && self.knowsClass($0.className) }.map(\.uuid))
            for position in typed.indices {
                let edit = typed[position]
                let object = restoredObject(edit.uuid)
                if let object, let index = object.info.indexByName[edit.key],
                   edit.edit.placements.allSatisfy({ $0.isMove || objects[$0.element] != nil || added.contains($0.element) }) {
                    typedOld.append((object, index, object.value(at: index), position))
                    continue
                }
                let base = edit.baseModels.map(\.uuid)
                var elements = base
                edit.edit.apply(to: &elements)
                typed[position].fallback = elements
                fragments[edit.position].properties[edit.key] = .array(elements.map { .string($0.wireString) })
                fragments[edit.position].bases = (fragments[edit.position].bases ?? [:]).merging([edit.key: base]) { _, new in new }
            }
        }
        // Originals, read before anything changes; references resolve among the current objects.
        var originals: [(object: ModelObject, index: Int, old: Any, fragment: Int)] = []
        // References whose kept whole value (§8.23) the change set replaces, as its flush noted them.
        var replacedKeptReferences = Set<UUID>()
        for (position, fragment) in fragments.enumerated() where fragment.kind == .change {
            guard let object = objects[fragment.uuid] else { continue }
            let info = object.info
            for name in fragment.properties.keys.sorted() {
                guard let index = info.indexByName[name], info.properties[index].isSynced else { continue }
                if info.properties[index].valueKind == .reference && keepsWholeValue(of: object, at: index) {
                    replacedKeptReferences.insert(object.uuid)
                }
                var old = object.value(at: index)
                let storage = info.properties[index].storage
                if let base = fragment.bases?[name], storage.isModelList, let value = storage.modelList(base.compactMap { objects[$0] }, checkingFrom: 0) {
                    // What decoding the base's wire value gives (its objects here, in order), without it.
                    old = value
                } else if let base = fragment.bases?[name] {
                    let wire = JSON.array(base.filter { objects[$0] != nil }.map { .string($0.wireString) })
                    if let decoded = try? info.coder(at: index).decode(wire, property: name, resolver: { self.objects[$0] }) {
                        old = decoded
                    }
                }
                // A shared text's original is the edit its operations make (what a revert rolls back).
                originals.append((object, index, SharedText.restoredEdit(old, operations: fragment.textOperations?[name]) ?? old, position))
            }
        }
        let edits = typed
        func typedWrites(_ resolver: ModelResolver) throws(ModelError) -> [(ModelObject, Int, Any)] {
            var writes: [(ModelObject, Int, Any)] = []
            for entry in typedOld {
                writes.append((entry.object, entry.index, try Self.typedValue(edits[entry.edit], of: entry.object, entry.index, resolver: resolver)))
            }
            return writes
        }
        // Applied without a remote change set of its own (as the one-pass restore applies records):
        // the restored change set is the record's one, and a remote one in `history` would keep
        // both whole values of each collection it set (the last `historyLimit` records' arrays).
        if !isApplied { _ = try apply(fragments, applyDefaults: false, publishes: false, also: typedOld.isEmpty ? nil : typedWrites) }
        var changes: [ChangeSet.Change] = []
        var skeleton = fragments
        var collections: [CompactFragments.Collection] = []
        for (object, index, old, position) in typedOld {
            guard let made = keptVersions(of: object, index, old: old, new: object.value(at: index)), let versions = made else { continue }
            changes.append(ChangeSet.Change(object: object, property: index, original: .models(versions.base), result: .models(versions.new)))
            collections.append(CompactFragments.Collection(fragment: edits[position].position, key: edits[position].key, base: versions.base,
                                                           new: versions.new))
        }
        // A collection whose change goes from exactly the fragment's base to exactly its value keeps
        // one pair of versions for both (as a flush does); anything else is kept as it comes.
        for (object, index, old, position) in originals {
            let new = object.value(at: index)
            guard !isApplied else {
                // A compacted record: its values are the snapshot's, not what it made, so its
                // changes are kept as they are (no chain to follow).
                changes.append(ChangeSet.Change(object: object, property: index, old: old, new: new))
                continue
            }
            let property = object.info.properties[index]
            if let base = fragments[position].bases?[property.name], property.storage.isModelList,
               case let oldElements = property.storage.models(of: old).map(\.uuid), base == oldElements,
               fragments[position].properties[property.name]?.uuidElements == property.storage.models(of: new).map(\.uuid),
               let made = keptVersions(of: object, index, old: old, new: new), let versions = made {
                changes.append(ChangeSet.Change(object: object, property: index, original: .models(versions.base), result: .models(versions.new)))
                collections.append(CompactFragments.Collection(fragment: position, key: property.name, base: versions.base, new: versions.new))
                skeleton[position].properties[property.name] = nil
                skeleton[position].bases?[property.name] = nil
                if skeleton[position].bases?.isEmpty == true { skeleton[position].bases = nil }
                continue
            }
            changes.append(keptChange(of: object, index, old: old, new: new))
        }
        let changeSet = if collections.isEmpty {
            ChangeSet(fragments: fragments, changes: changes, message: message, isAtomic: isAtomic, origin: .local, state: .syncing,
                      scope: self, id: id)
        } else {
            ChangeSet(stored: CompactFragments(skeleton: skeleton, collections: collections), changes: changes, message: message,
                      isAtomic: isAtomic, origin: .local, state: .syncing, scope: self, id: id)
        }
        changeSet.replacedKeptReferences = replacedKeptReferences
        history.append(changeSet)
        if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
        unsettledRestored.append(changeSet)
        return changeSet
    }

    /// The value of collection property `index` of `object` after `typed` (see `restorePending`),
    /// whose inserted elements `resolver` finds (the models here and those the record adds): an
    /// append is the base's models and the new ones, cast one by one (O(edit), besides the copy);
    /// any other edit O(n).
    private static func typedValue(_ typed: ChainedCollectionEdit, of object: ModelObject, _ index: Int,
                                   resolver: ModelResolver) throws(ModelError) -> Any {
        let base = typed.baseModels
        var models = base
        var checkedFrom = base.count
        if typed.edit.isAppend(after: base.last?.uuid) {
            models.reserveCapacity(base.count + typed.edit.placements.count)
            for placement in typed.edit.placements {
                guard let model = resolver(placement.element) else { throw ModelError.unknownObject(placement.element) }
                models.append(model)
            }
        } else {
            var byUUID: [UUID: ModelObject] = [:]
            for model in base { byUUID[model.uuid] = model }
            var elements = base.map(\.uuid)
            typed.edit.apply(to: &elements)
            models = []
            models.reserveCapacity(elements.count)
            for element in elements {
                guard let model = byUUID[element] ?? resolver(element) else { throw ModelError.unknownObject(element) }
                models.append(model)
            }
            checkedFrom = 0
        }
        let property = object.info.properties[index]
        guard let value = property.storage.modelList(models, checkingFrom: checkedFrom) else {
            throw ModelError.wrongClass(property: property.name, expected: "\(property.storage.modelTypes)", got: "another class")
        }
        return value
    }

    /// Applies a record of a fragment log that the one-pass restore leaves to this general path:
    /// one that holds what the app does not understand (kept, §8.23) or values of an earlier
    /// `modelVersion` (migrated first, `migrated(_:versions:)`). A scope without a root gets the
    /// record's root; nothing is recorded as outgoing. O(fragments).
    func restoreRecord(root rootUUID: UUID?, fragments: [SyncFragment], versions: [String: Int]) throws(ModelError) {
        let fragments = migrated(fragments, versions: versions)
        if let rootUUID {
            if root == nil, let fragment = fragments.first(where: { $0.uuid == rootUUID }) {
                root = try ModelRegistry.make(className: fragment.className, uuid: rootUUID)
            } else {
                adoptRootUUID(rootUUID)
            }
        }
        for (name, version) in versions where !knowsClass(name) {
            unknown.versions[name] = max(unknown.versions[name] ?? 0, version)
        }
        _ = try apply(fragments, applyDefaults: false, publishes: false)  // a restore, as the one-pass path: no change set
    }

    /// `fragments` with the values of every object whose class is a `ModelMigration` of a newer
    /// `modelVersion` than `versions` names (0 when absent) rewritten by its `migrate(_:from:)`.
    func migrated(_ fragments: [SyncFragment], versions: [String: Int]) -> [SyncFragment] {
        guard ModelRegistry.hasModelVersions else { return fragments }
        return fragments.map { fragment in
            guard knowsClass(fragment.className), let type = try? ModelRegistry.modelClass(named: fragment.className),
                  let migrating = type as? any ModelMigration.Type,
                  case let version = versions[fragment.className] ?? 0, version < type.modelVersion else { return fragment }
            var fragment = fragment
            migrating.migrate(&fragment.properties, from: version)
            return fragment
        }
    }

    /// The model versions a record of `fragments` is written with: every class of a version other
    /// than 0 among them, known or kept unknown (`versions` seen in the log). O(fragments) when a
    /// class has a version; O(1) otherwise.
    func modelVersions(of fragments: [SyncFragment]) -> [String: Int] {
        guard ModelRegistry.hasModelVersions || !unknown.versions.isEmpty else { return [:] }
        var versions: [String: Int] = [:]
        for fragment in fragments where versions[fragment.className] == nil {
            if let version = unknown.versions[fragment.className] {
                versions[fragment.className] = version
            } else if knowsClass(fragment.className), let type = try? ModelRegistry.modelClass(named: fragment.className),
                      type.modelVersion != 0 {
                versions[fragment.className] = type.modelVersion
            }
        }
        return versions
    }

    /// The first class `versions` names in a newer model version than this app's, as the error
    /// that refuses the record.
    func newerModel(in versions: [String: Int]) -> (className: String, version: Int, supported: Int)? {
        for (name, version) in versions.sorted(by: { $0.key < $1.key }) where version > 0 && knowsClass(name) {
            guard let type = try? ModelRegistry.modelClass(named: name), version > type.modelVersion else { continue }
            return (name, version, type.modelVersion)
        }
        return nil
    }

    /// Puts the scope back as it was before a restore that failed: without a root (`before` nil), or
    /// with the root's identity and the tree of `before` (a snapshot taken then). O(objects).
    func undoRestore(to before: (uuid: UUID, fragments: [SyncFragment])?) {
        guard let before else {
            root = nil
            unknown = UnknownState()
            return
        }
        _ = try? applyState(rootUUID: before.uuid, fragments: before.fragments)
    }

    /// The UUIDs collection property `name` of object `uuid` holds on the wire (with the elements of
    /// unknown classes it keeps, §8.23, as a logged edit's base has them), or nil when the scope has
    /// no such object or property. O(n).
    func collectionElements(_ uuid: UUID, _ name: String) -> [UUID]? {
        if let whole = unknown.extras[uuid]?[name] { return UnknownState.uuids(in: whole) }
        guard let object = restoredObject(uuid) else { return nil }
        let info = object.info
        guard let index = info.indexByName[name] else { return nil }
        return info.properties[index].storage.models(of: object.value(at: index)).map(\.uuid)
    }

    /// The models collection property `name` of object `uuid` holds: its value's very array (the
    /// same storage), for a collection of models that holds nothing the app does not understand
    /// (§8.23); nil otherwise. O(1).
    func collectionModels(_ uuid: UUID, _ name: String) -> [ModelObject]? {
        guard unknown.extras[uuid]?[name] == nil, let object = restoredObject(uuid),
              let index = object.info.indexByName[name], case let property = object.info.properties[index],
              property.valueKind == .collection, property.storage.isModelList else { return nil }
        return property.storage.models(of: object.value(at: index))
    }

    /// The attached object `uuid`, or the root when `uuid` is the root's and the table of attached
    /// objects does not hold it: the one lookup of the restore's collection paths.
    private func restoredObject(_ uuid: UUID) -> ModelObject? {
        objects[uuid] ?? (uuid == root?.uuid ? root : nil)
    }

    /// Makes room for `additional` more attached objects (a restore about to attach them). O(objects).
    func reserveObjects(_ additional: Int) {
        objects.reserveCapacity(objects.count + additional)
    }
}
