import Foundation

/// Change sets: flushing what is pending into one, publishing it, and `modify`.
extension Scope {
    /// Ends the current flush now: everything recorded so far becomes one change set, delivered to
    /// the `onChanges` listeners. Returns it, or nil when nothing was recorded.
    @discardableResult
    public func flush() -> ChangeSet? {
        let building = pending.takeAll()
        leftThisFlush.removeAll()
        let message = flushMessage
        let atomic = flushAtomic
        flushMessage = nil
        flushAtomic = false
        var fragments: [SyncFragment] = []
        var kept: [CompactFragments.Collection] = []
        var changes: [ChangeSet.Change] = []
        var touchedReferences = false
        var replacedKeptReferences = Set<UUID>()
        for (object, entry) in building {
            let info = object.info
            let properties = info.properties
            switch entry.kind {
            case .add:
                fragments.append(addFragment(of: object))
            case .change:
                var values: [String: JSON] = [:]
                var bases: [String: [UUID]] = [:]
                var texts: [String: JSON] = [:]
                var counters: [String: Int64] = [:]
                var collections: [(key: String, versions: (base: CollectionVersion, new: CollectionVersion))] = []
                for index in entry.touched {
                    let property = properties[index]
                    let new = object.value(at: index)
                    guard let old = entry.originals[index] else { continue }
                    let coder = info.coder(at: index)
                    if var text = new as? SharedText {
                        if let before = old as? SharedText, before.storage !== text.storage {
                            // A whole new text was assigned: it is typed over the text the property
                            // held, so it merges like any edit, and the property keeps that text.
                            before.storage.replaceText(with: text.text)
                            text = SharedText(storage: before.storage, version: text.version + 1, update: nil)
                            property.storage.restore(text, in: object, offset: property.offset)
                        }
                        // A shared text sends its operations (§8.21), whatever the plain text did.
                        let (operations, deleted) = text.storage.takeUnsent()
                        guard !operations.isEmpty else { continue }
                        values[property.name] = text.wireValue()
                        texts[property.name] = TextOperation.json(operations)
                        let edit = SharedText(storage: text.storage, version: text.version, update: .toggle(SharedTextEdit(operations, deleted: deleted)))
                        changes.append(ChangeSet.Change(object: object, property: index, old: edit, new: edit))
                        continue
                    }
                    let isCollection = property.valueKind == .collection
                    if isCollection, let made = keptVersions(of: object, index, old: old, new: new) {
                        // Kept as versions: no wire value, no strings (issue 30).
                        guard let versions = made else { continue }
                        touchedReferences = true
                        changes.append(ChangeSet.Change(object: object, property: index, original: .models(versions.base),
                                                        result: .models(versions.new)))
                        collections.append((property.name, versions))
                        continue
                    }
                    let oldWire = coder.wireValue(of: old)
                    var newWire = coder.wireValue(in: object, offset: property.offset)
                    guard oldWire != newWire else { continue }
                    let change = keptChange(of: object, index, old: old, new: new, oldWire: oldWire, newWire: newWire)
                    // A collection's elements before the flush: the merge's base.
                    var base = isCollection ? property.storage.models(of: old).map(\.uuid) : nil
                    if property.valueKind != .value {
                        touchedReferences = true
                        if property.valueKind == .reference && keepsWholeValue(of: object, at: index) { replacedKeptReferences.insert(object.uuid) }
                        // A value that holds objects of unknown classes goes out whole (§8.23).
                        if let whole = outgoingWhole(of: object, at: index, oldWire: oldWire, newWire: newWire) {
                            newWire = whole.value
                            base = whole.base
                        }
                    }
                    values[property.name] = newWire
                    if let base { bases[property.name] = base }
                    if let counter = new as? SharedCounter, let before = old as? SharedCounter {
                        counters[property.name] = counter.value &- before.value
                    }
                    changes.append(change)
                }
                guard !values.isEmpty || !collections.isEmpty else { continue }
                for collection in collections {
                    kept.append(CompactFragments.Collection(fragment: fragments.count, key: collection.key, base: collection.versions.base,
                                                            new: collection.versions.new))
                }
                fragments.append(SyncFragment(kind: .change, uuid: object.uuid, className: object.className,
                                              properties: values, bases: bases.isEmpty ? nil : bases,
                                              textOperations: texts.isEmpty ? nil : texts,
                                              counterDeltas: counters.isEmpty ? nil : counters))
            }
        }
        if touchedReferences { reconcileUnknown() }
        guard !fragments.isEmpty else { return nil }
        let changeSet = ChangeSet(stored: CompactFragments(skeleton: fragments, collections: kept), changes: changes, message: message,
                                  isAtomic: atomic, origin: .local, state: awaitsSettlement ? .syncing : .completed, scope: self)
        changeSet.replacedKeptReferences = replacedKeptReferences
        if let call = flushProcedure {
            flushProcedure = nil
            changeSet.procedure = call.name
            // A call that fails its constraints is reverted here and never recorded or sent (§4.7).
            guard call.allows(changeSet) else {
                changeSet.revert()
                return changeSet
            }
        }
        if !isReplaying {
            undoStack.append(changeSet)
            if undoStack.count > historyLimit { undoStack.removeFirst(undoStack.count - historyLimit) }
            redoStack.removeAll()
        }
        publish(changeSet)
        return changeSet
    }

    /// The versions of a change of collection property `index` of `object` from `old` to `new`, made
    /// without wire values: nil when the property is not kept so (not an array of models, or it
    /// holds objects of unknown classes, §8.23); `.some(nil)` when the elements did not change.
    /// One pass of pointer compares (the common prefix and suffix, ``ModelObject/commonEnds(_:_:)``)
    /// plus the work of the models between them, no strings; whether the new value holds an element
    /// twice is read from the links of those models. A change made on the value the previous one
    /// left (the chain's, compared by storage) reads no other UUID; see
    /// ``CollectionChains/versions(of:_:models:baseModels:shared:isOnce:)``. `shared`: the versions
    /// are the change set's fragment's too (the flush), so they end both chains (``CollectionChains``).
    func keptVersions(of object: ModelObject, _ index: Int, old: Any, new: Any, shared: Bool = true)
        -> (base: CollectionVersion, new: CollectionVersion)?? {
        let property = object.info.properties[index]
        guard property.valueKind == .collection, property.storage.isModelList,
              unknown.extras.isEmpty || unknown.extras[object.uuid]?[property.name] == nil
        else { return nil }
        let oldModels = property.storage.models(of: old)
        let newModels = property.storage.models(of: new)
        let isOnce = { (position: Int) -> Bool in
            var links = 0
            for link in newModels[position].tracking.parents where link.parent === object && link.property == index { links += 1 }
            return links == 1
        }
        return .some(collectionChains.versions(of: object.uuid, property.name, models: newModels, baseModels: oldModels, shared: shared,
                                               isOnce: isOnce))
    }

    /// The change of property `index` of `object` from `old` to `new` (whose wire values are
    /// `oldWire` and `newWire`: computed when nil) as a change set keeps it: a collection of models
    /// whose wire values are its models' UUIDs as two versions chained on the change sets before
    /// it (``ChangeSet/Change/Value``), anything else as it is. O(n) for a collection of n.
    func keptChange(of object: ModelObject, _ index: Int, old: Any, new: Any, oldWire: JSON? = nil, newWire: JSON? = nil) -> ChangeSet.Change {
        let property = object.info.properties[index]
        guard property.valueKind == .collection else { return ChangeSet.Change(object: object, property: index, old: old, new: new) }
        if let made = keptVersions(of: object, index, old: old, new: new, shared: false) {
            guard let versions = made else { return ChangeSet.Change(object: object, property: index, old: old, new: new) }
            return ChangeSet.Change(object: object, property: index, original: .models(versions.base), result: .models(versions.new))
        }
        let coder = object.info.coder(at: index)
        let oldModels = property.storage.models(of: old)
        let newModels = property.storage.models(of: new)
        guard let base = (oldWire ?? coder.wireValue(of: old)).uuidElements, base.elementsEqual(oldModels.lazy.map(\.uuid)),
              let elements = (newWire ?? coder.wireValue(of: new)).uuidElements, elements.elementsEqual(newModels.lazy.map(\.uuid))
        else { return ChangeSet.Change(object: object, property: index, old: old, new: new) }
        let versions = collectionChains.versions(of: object.uuid, property.name, base: base, new: elements, models: newModels,
                                                 baseModels: oldModels)
        return ChangeSet.Change(object: object, property: index, original: .models(versions.base), result: .models(versions.new))
    }

    func publish(_ changeSet: ChangeSet) {
        history.append(changeSet)
        if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
        listeners.notify(changeSet)
    }

    /// Calls `body` with every change set, local and remote, after the turn in which it was made.
    @discardableResult
    public func onChanges(_ observer: AnyObject, _ body: @escaping @MainActor (ChangeSet) -> Void) -> ObservationToken {
        listeners.add(observer, body)
    }

    /// Every change set from now on, local and remote, as an `AsyncSequence` (each call makes a
    /// new sequence for one consumer). Buffering: unbounded, so a consumer sees every change set;
    /// consume it or cancel its task. The sequence ends when the scope is freed.
    public func changeSets() -> AsyncStream<ChangeSet> {
        listeners.stream(startingWith: nil, bufferingPolicy: .unbounded)
    }

    /// Runs `changes` as one change set with `message` (what is pending is flushed first).
    @discardableResult
    public func modify<Failure: Error>(message: String? = nil, _ changes: () throws(Failure) -> Void) throws(Failure) -> ChangeSet? {
        try modify(message: message, atomic: false, changes)
    }

    /// Runs `changes` as one atomic change set: the server applies all of it or none of it.
    @discardableResult
    public func modifyAtomically<Failure: Error>(message: String? = nil, _ changes: () throws(Failure) -> Void) throws(Failure) -> ChangeSet? {
        try modify(message: message, atomic: true, changes)
    }

    func modify<Failure: Error>(message: String?, atomic: Bool, _ changes: () throws(Failure) -> Void) throws(Failure) -> ChangeSet? {
        flush()
        defer { flushMessage = nil; flushAtomic = false }
        try changes()
        flushMessage = message
        flushAtomic = atomic
        return flush()
    }
}
