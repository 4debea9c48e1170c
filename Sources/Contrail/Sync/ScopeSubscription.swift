import Foundation

/// One fetched scope inside a session: its scope index on the current wire session, its sync
/// mode, its queue of pending local change sets, and how remote fragments are applied to it.
@MainActor
final class ScopeSubscription {
    let scope: Scope
    let params: [String: JSON]
    var mode: SyncMode
    /// The scope's handle on the current wire session (from `ScopeFetchReply`).
    var scopeIndex: Int?
    /// Whether the server's state has been applied on the current wire session.
    var isAttached = false
    /// Remote changes were dropped while the mode did not apply them: refetch before applying again.
    var missedRemote = false
    /// Whether a fetch is on its way.
    var isFetching = false
    /// Whether a state of this scope was ever applied in this session: a refetch of such a scope
    /// that fails (after a new wire session, say) is tried again, since its pending change sets wait
    /// for it; the app's first fetch that fails is the app's to retry.
    var wasAttached = false
    /// Refetches in a row that failed: the exponent of the next retry's backoff.
    var failedRefetches = 0
    let queue = ChangeSetQueue()
    /// Fires once the state of the latest fetch is applied (or the fetch fails).
    var attached = ReplyWaiter<Void>()
    /// A full state arriving in parts (Protocol §8.25), if one is.
    var incoming: StateAssembly.Phase?
    /// Told each part's progress (from the latest `fetch(_:progress:)` that passed one).
    var progress: (@MainActor (FetchProgress) -> Void)?
    /// Parts of states received so far: a fetch keeps waiting past its timeout while this grows.
    var partsReceived = 0
    /// UUIDs the local root had before it took over the server's root UUID.
    private var rootAliases: [UUID: UUID] = [:]
    private var changeToken: ObservationToken?
    /// Presence (Protocol §8.20): when this replica's value last went out (the client's throttle).
    var presenceSentAt: Duration?
    /// A send the throttle deferred.
    var presenceFlush: Task<Void, Never>?
    private var presenceToken: ObservationToken?

    init(scope: Scope, params: [String: JSON], mode: SyncMode) {
        self.scope = scope
        self.params = params
        self.mode = mode
    }

    /// Starts queueing the scope's local change sets.
    func listen(_ onLocal: @escaping @MainActor (ChangeSet) -> Void) {
        changeToken = scope.onChanges(self) { changeSet in
            guard changeSet.origin == .local, changeSet.state == .syncing else { return }
            onLocal(changeSet)
        }
    }

    func stopListening() {
        changeToken?.cancel()
        changeToken = nil
    }

    /// Calls `onChange` when the scope's presence value changes or becomes active.
    func listenToPresence(_ onChange: @escaping @MainActor () -> Void) {
        presenceToken = scope.presence.localChanges.add(self) { onChange() }
    }

    /// Stops carrying the scope's presence: its peers leave (the scope was detached or removed).
    func stopPresence() {
        presenceToken?.cancel()
        presenceToken = nil
        presenceFlush?.cancel()
        presenceFlush = nil
        scope.presence.removeAllPeers()
    }

    /// The fragments to send for `entry`, with old root UUIDs replaced by the server's: whole, or
    /// without the collections its change set keeps as versions (``CompactFragments/skeleton``).
    func fragments(of entry: ChangeSetQueue.Entry, whole: Bool = true) -> [SyncFragment] {
        let fragments = entry.prefixedFragments(whole: whole)
        guard !rootAliases.isEmpty else { return fragments }
        return fragments.map { fragment in
            var fragment = fragment
            if let alias = rootAliases[fragment.uuid] { fragment.uuid = alias }
            return fragment
        }
    }

    // MARK: - Applying remote changes

    /// Applies the server's full state. Keys held by pending local change sets keep their local
    /// values (the state's values become their originals). `prepared`: the state's new objects
    /// made ready while it arrived in parts.
    func applyState(_ state: ScopeState, prepared: PreparedState? = nil) throws(SyncError) {
        guard let root = scope.root else { throw .scopeHasNoRoot(scope.name) }
        if root.uuid != state.rootUUID { rootAliases[root.uuid] = state.rootUUID }
        scope.flush()
        do {
            _ = try scope.applyState(rootUUID: state.rootUUID, fragments: state.fragments, redirect: redirect, prepared: prepared)
        } catch {
            throw .invalidState(error.description)
        }
        isAttached = true
        missedRemote = false
    }

    /// Applies a remote change set. Returns false when the replica may now differ from the server
    /// (refetch then): the batch could not be applied, or it changed objects this replica holds
    /// outside its tree (taken out by a pending local edit that may yet be undone or merged away).
    func applyRemote(_ fragments: [SyncFragment]) -> Bool {
        guard !fragments.isEmpty else { return true }
        scope.flush()
        // Collections sent as edits (§8.24) become whole values first; an edit whose base this
        // replica does not hold applies nothing (the scope is fetched again).
        guard let fragments = resolvingCollectionEdits(fragments) else { return false }
        do {
            let report = try scope.apply(fragments, applyDefaults: false, redirect: redirect)
            return report.unknownObjects.isEmpty
        } catch {
            return false
        }
    }

    /// `fragments` (a broadcast) with each collection edit (§8.24) turned into the whole value it
    /// gives, applied to its base: the value the server had before it, which this replica holds as
    /// the kept whole value (§8.23), the original of the first pending change set holding the key, or
    /// the property's value, whichever the edit's digest names. Nil when none does (a value missed).
    /// O(collection size) per edit.
    func resolvingCollectionEdits(_ fragments: [SyncFragment]) -> [SyncFragment]? {
        guard fragments.contains(where: { $0.collectionEdits != nil }) else { return fragments }
        var resolved: [SyncFragment] = []
        resolved.reserveCapacity(fragments.count)
        for fragment in fragments {
            guard let whole = fragment.replacingCollectionEdits(base: { key, edit in serverValue(of: fragment.uuid, key, base: edit) })
            else { return nil }
            resolved.append(whole)
        }
        return resolved
    }

    /// The value of collection `key` of object `uuid` that is `edit`'s base, among those this
    /// replica may hold as the server's (see ``resolvingCollectionEdits(_:)``).
    private func serverValue(of uuid: UUID, _ key: String, base edit: CollectionEdit) -> [UUID]? {
        var candidates: [() -> [UUID]?] = [
            { [scope] in scope.unknown.extras[uuid]?[key]?.uuidElements },
            { [scope] in scope.unknown.objects[uuid]?.properties[key]?.uuidElements },
        ]
        if let object = scope.object(for: uuid), let index = object.info.indexByName[key] {
            let change = ChangeKey(object, index)
            candidates.append { [queue] in
                guard let holder = queue.firstHolder(of: change), let position = holder.positions[change] else { return nil }
                return holder.changeSet.changes[position].originalElements
            }
            candidates.append { Self.models(object.value(at: index)).map(\.uuid) }
        }
        for candidate in candidates {
            if let value = candidate(), edit.isBase(value) { return value }
        }
        return nil
    }

    /// Applies values the server set on an accepted fragment (`modifications`, §4.8), as the
    /// server's value after `entry`: a later pending change set holding the key keeps its value.
    /// Returns false when a value could not be applied (it names an object this replica does not
    /// hold): the replica may differ from the server, so refetch then.
    func applyModifications(_ values: [String: JSON], to uuid: UUID, after entry: ChangeSetQueue.Entry) -> Bool {
        guard let object = scope.object(for: uuid) else { return false }
        let info = object.info
        let resolver: ModelResolver = { [scope] in scope.object(for: $0) }
        var complete = true
        let isUnknown: (UUID) -> Bool = { [scope] in scope.unknown.objects[$0] != nil }
        scope.applyingRemote {
            for (name, wire) in values {
                guard let index = info.indexByName[name], info.properties[index].isSynced else {
                    scope.keepUnknown(name, wire, of: uuid)  // kept as the server has it (§8.23)
                    continue
                }
                let part = scope.visiblePart(wire, of: info, at: index, isUnknown: isUnknown)
                if info.properties[index].valueKind != .value { scope.keepUnknown(info.properties[index].name, part.whole, of: uuid) }
                guard let value = try? info.decode(part.visible, at: index, resolver: resolver) else {
                    complete = false
                    continue
                }
                // A shared text is not overwritten by a plain value: its operations settle it (§8.21).
                if value is SharedText { continue }
                if let next = queue.holder(of: ChangeKey(object, index), after: entry) {
                    if let held = heldValue(object, index, heldBy: next, remote: value) { object.setValue(held, at: index) }
                } else {
                    object.setValue(value, at: index)
                }
            }
        }
        scope.reconcileUnknown()
        return complete
    }

    /// Whether property `name` of the object `uuid` is a shared counter (§8.21).
    func isCounter(_ name: String, of uuid: UUID) -> Bool {
        guard let object = scope.object(for: uuid), let index = object.info.indexByName[name] else { return false }
        return object.value(at: index) is SharedCounter
    }

    /// The write `Scope.apply` should do for a remote value (§8.3): the value itself when no
    /// pending change set holds the key, otherwise what `heldValue(_:_:heldBy:remote:)` says.
    private func redirect(_ object: ModelObject, _ index: Int, _ remote: Any) -> Any? {
        // A shared text merges remote operations into pending local ones by itself (§8.21).
        if remote is SharedText { return remote }
        guard let holder = queue.firstHolder(of: ChangeKey(object, index)) else { return remote }
        return heldValue(object, index, heldBy: holder, remote: remote)
    }

    /// The write for a remote value of a key that `holder` is the first pending change set to hold:
    /// the value becomes `holder`'s original (what a revert goes back to), and the property shows the
    /// pending edits replayed onto it (`rebase`). Nil leaves the property alone: an object this
    /// replica sends an `add` for keeps its values (the server takes them, or sends its own back in
    /// the reply), and the add remembers that it held a remote value back.
    private func heldValue(_ object: ModelObject, _ index: Int, heldBy holder: ChangeSetQueue.Entry, remote: Any) -> Any? {
        let key = ChangeKey(object, index)
        let property = object.info.properties[index]
        // The pending local value wins over a kept remote reference to an unknown object (§8.23).
        if property.valueKind == .reference { scope.keepUnknown(property.name, nil, of: object.uuid) }
        if holder.holdsThroughAdd(key) {
            holder.heldBackRemoteValues = true
            return nil
        }
        // Remote the value the pending edits were made on (a fetch that finds the server where this
        // replica left it), they already show what the rebase would reach: O(n), not O(holders × n).
        let unchanged = property.valueKind == .collection && holder.positions[key].map { position in
            holder.changeSet.changes[position].originalElements == Self.models(remote).map(\.uuid)
        } == true
        holder.setOriginal(key, remote)
        // The kept whole value (§8.23) follows the pending edits too: the last one holding the key
        // sent the whole collection, hidden elements included, and a reply to an edit the server
        // applied to its current value does not send it back (§8.24). One sent without hidden
        // elements (made before they arrived) leaves them where the server has them, as its merge
        // does: they are woven into what the pending edits reach.
        var weaving: JSON?
        if property.valueKind == .collection, let whole = scope.unknown.extras[object.uuid]?[property.name],
           let last = queue.holders(of: key, from: holder).last,
           let sent = last.sentValue(of: object, property: index, name: property.name)?.value {
            if UnknownState.uuids(in: sent).contains(where: isHidden) {
                scope.keepUnknown(property.name, sent, of: object.uuid)
            } else {
                weaving = whole
            }
        }
        let value = unchanged ? nil : rebase(object, index, remote: remote, from: holder)
        if let weaving {
            scope.keepWoven(weaving, into: Self.models(value ?? object.value(at: index)).map(\.uuid), as: property.name, of: object.uuid)
        }
        return value
    }

    /// Whether `uuid` is an object of a class the app does not know (kept hidden, §8.23). O(1).
    private func isHidden(_ uuid: UUID) -> Bool { scope.unknown.objects[uuid] != nil }

    /// What the server will hold once it applies `first` and every later pending change set holding
    /// the key, starting from `remote`: each one's own sent value, a collection merged by its base as
    /// the server merges it (§8.4), so the replica shows now what the server will reach. A remote
    /// value arriving while a change set is unanswered is one the server made before it, so this is
    /// exact whatever values arrived in between (a full state after a restart, an undo that changed an
    /// object while it was out of the tree). Nil (keep the local value) when no holder's value is known.
    private func rebase(_ object: ModelObject, _ index: Int, remote: Any, from first: ChangeSetQueue.Entry) -> Any? {
        let property = object.info.properties[index]
        if let counter = remote as? SharedCounter {
            return rebaseCounter(object, index, remote: counter, from: first, name: property.name)
        }
        let isCollection = property.valueKind == .collection
        let theirs = Self.models(remote)
        var byUUID: [UUID: ModelObject] = [:]
        for model in theirs + Self.models(object.value(at: index)) { byUUID[model.uuid] = model }
        var uuids = theirs.map(\.uuid)
        var wire: JSON?
        for holder in queue.holders(of: ChangeKey(object, index), from: first) {
            guard let sent = holder.sentValue(of: object, property: index, name: property.name) else { continue }
            for model in sent.models { byUUID[model.uuid] = model }
            wire = sent.value
            guard isCollection, case .array(let elements) = sent.value else { continue }
            let new = elements.compactMap { $0.stringValue.flatMap(UUID.init(wireString:)) }
            uuids = sent.base.map { CollectionMerge.merge(base: $0, new: new, current: uuids) } ?? new
        }
        guard var wire else { return nil }
        // Objects an add names may be out of the tree just now (a pending edit took them out).
        let resolve: ModelResolver = { [scope] uuid in byUUID[uuid] ?? scope.object(for: uuid) ?? scope.retired[uuid]?.object }
        if isCollection { wire = .array(uuids.filter { resolve($0) != nil }.map { .string($0.wireString) }) }
        return try? object.info.coder(at: index).decode(wire, property: property.name, resolver: resolve)
    }

    /// A shared counter's pending value (§8.21): the remote total plus every pending change set's
    /// delta (a change set without one, a plain write, sets the total). Nil when none holds it.
    private func rebaseCounter(_ object: ModelObject, _ index: Int, remote: SharedCounter, from first: ChangeSetQueue.Entry,
                               name: String) -> SharedCounter? {
        var total = remote
        var held = false
        for holder in queue.holders(of: ChangeKey(object, index), from: first) {
            guard let sent = holder.sentValue(of: object, property: index, name: name) else { continue }
            held = true
            if let delta = sent.delta {
                total.add(delta)
            } else if let value = sent.value.int64Value {
                total = SharedCounter(value)
            }
        }
        return held ? total : nil
    }

    private static func models(_ value: Any?) -> [ModelObject] {
        (value as? any PropertyValue)?.models ?? []
    }
}
