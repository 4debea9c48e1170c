import Foundation

/// A named model tree with one root. The scope keeps every attached object by UUID, turns local
/// changes into change sets of sync fragments (one per object per flush), and applies fragments
/// that come from elsewhere.
///
/// ```swift
/// let scope = Scope(name: "Canvas")
/// scope.root = canvas
/// scope.onChanges(self) { changeSet in print(changeSet.fragments) }
/// scope.modifyAtomically(message: "add to cart") {
///     cart.items.append(item)
///     cart.total += item.price
/// }
/// ```
@MainActor
public final class Scope {
    /// The scope's name (what clients fetch).
    public let name: String

    /// The root of the tree. Setting it attaches the new tree and detaches the old one.
    public var root: ModelObject? {
        didSet {
            guard oldValue !== root else { return }
            if let oldValue, oldValue.scope === self {
                ModelObject.detachUnreachable([oldValue], from: self)
            }
            if let root {
                isRecordingAttach = false
                root.attach(to: self)
                isRecordingAttach = true
            }
        }
    }

    /// Whether a sync layer settles this scope's change sets (they start `syncing` instead of `completed`).
    public var isSynced = false

    /// Upper bound of `history` and of the undo stack (older change sets are dropped from memory, not from a log).
    public var historyLimit = 1000

    /// Change sets in the order they were made or applied, oldest first.
    public private(set) var history: [ChangeSet] = []

    private(set) var objects: [UUID: ModelObject] = [:]
    /// Objects that left the tree, by UUID, while something else keeps them alive (a pending change
    /// set, the undo stack, the app). A remote fragment naming one of them brings back that same
    /// object rather than a twin, so edits made on it stay attached to what the server knows.
    private var retired: [UUID: WeakObject] = [:]
    private var retiredPruneThreshold = 64
    /// Objects the server already knew that left the tree during the current flush, with the fragment
    /// they had pending: a return within the same flush is a move, which sends no `add`.
    private var leftThisFlush: [ObjectIdentifier: PendingFragment?] = [:]
    private var pending: [ObjectIdentifier: PendingFragment] = [:]
    private var pendingOrder: [ObjectIdentifier] = []
    /// The most entries `pending` held in one flush: recording reserves that much at the first entry.
    private var pendingCapacity = 0
    private var remoteDepth = 0
    private var isRecordingAttach = true
    private let listeners = ObserverList<ChangeSet>()
    private var continuations: [UUID: AsyncStream<ChangeSet>.Continuation] = [:]
    private var lastRecorded: [ChangeKey: ContinuousClock.Instant] = [:]
    private var throttled: Set<ChangeKey> = []
    private var undoStack: [ChangeSet] = []
    private var redoStack: [ChangeSet] = []
    private var flushMessage: String?
    private var flushAtomic = false
    /// The procedure call the next non-empty flush makes (`modify(procedure:)`).
    var flushProcedure: ProcedureCall?

    public init(name: String) {
        self.name = name
    }

    // MARK: - Lookup

    /// The attached object with this UUID.
    public func object(for uuid: UUID) -> ModelObject? { objects[uuid] }

    /// Every attached object (unordered).
    public var allObjects: [ModelObject] { Array(objects.values) }

    /// The number of attached objects.
    public var count: Int { objects.count }

    // MARK: - Hooks from the model tree

    func didAttach(_ object: ModelObject) {
        objects[object.uuid] = object
        if retired[object.uuid]?.object === object { retired[object.uuid] = nil }
        let id = ObjectIdentifier(object)
        if let left = leftThisFlush.removeValue(forKey: id) {
            // Back within the flush it left in: a move. Only the parents' changes go out.
            if let left, pending[id] == nil {
                pending[id] = left
                pendingOrder.append(id)
            }
            return
        }
        guard remoteDepth == 0, isRecordingAttach else { return }
        if pending[id] == nil { pendingOrder.append(id) }
        pending[id] = PendingFragment(object: object, kind: .add)
        scheduleFlush()
    }

    func didDetach(_ object: ModelObject) {
        if objects[object.uuid] === object { objects[object.uuid] = nil }
        retire(object)
        let id = ObjectIdentifier(object)
        let entry = pending.removeValue(forKey: id)
        if entry != nil { pendingOrder.removeAll { $0 == id } }
        // An object added in this flush and gone again cancels out; one the server knows may come back.
        if remoteDepth == 0, entry?.kind != .add { leftThisFlush[id] = entry }
    }

    private func retire(_ object: ModelObject) {
        retired[object.uuid] = WeakObject(object)
        if retired.count > retiredPruneThreshold {
            retired = retired.filter { $0.value.object != nil }
            retiredPruneThreshold = max(64, retired.count * 2)
        }
    }

    func record<Value: PropertyValue>(_ object: ModelObject, property: Int, old: Value) {
        guard remoteDepth == 0 else { return }
        let options = object.info.properties[property].options
        guard !options.isLocal else { return }
        let interval = options.minSyncIntervalMilliseconds
        if interval > 0, pending[ObjectIdentifier(object)]?.kind != .add {
            let key = ChangeKey(object, property)
            if throttled.contains(key) { return }
            let now = ContinuousClock.now
            if let last = lastRecorded[key], now - last < .milliseconds(interval) {
                throttled.insert(key)
                let due = last + .milliseconds(interval)
                let boxedOld: Any = old
                DispatchQueue.main.asyncAfter(deadline: .now() + (due - now).seconds) { [weak self, weak object] in
                    MainActor.assumeIsolated {
                        guard let self, let object else { return }
                        self.throttled.remove(key)
                        guard object.scope === self else { return }
                        self.lastRecorded[key] = .now
                        self.touch(object, property: property, old: boxedOld, base: nil)
                    }
                }
                return
            }
            lastRecorded[key] = now
        }
        touch(object, property: property, old: old, base: Value.valueKind == .collection ? old.models.map(\.uuid) : nil)
    }

    /// Notes that `property` of `object` changed in this flush, keeping the value it had before the
    /// first change. One hash lookup when the object is already pending; the entry is changed in place.
    private func touch(_ object: ModelObject, property: Int, old: @autoclosure () -> Any, base: @autoclosure () -> [UUID]?) {
        let id = ObjectIdentifier(object)
        if let at = pending.index(forKey: id) {
            guard pending.values[at].kind == .change, !pending.values[at].originals.contains(property) else { return }
            pending.values[at].originals[property] = old()
            if let base = base() { pending.values[at].bases[property] = base }
            return
        }
        // A flush is scheduled whenever `pending` stops being empty, so only the first entry asks;
        // it also makes room for as many entries as the largest flush so far had.
        if pending.isEmpty {
            scheduleFlush()
            pending.reserveCapacity(pendingCapacity)
            pendingOrder.reserveCapacity(pendingCapacity)
        }
        pendingOrder.append(id)
        pendingCapacity = max(pendingCapacity, pendingOrder.count)
        var entry = PendingFragment(object: object, kind: .change)
        entry.originals[property] = old()
        if let base = base() { entry.bases = [property: base] }
        pending[id] = entry
    }

    private func scheduleFlush() {
        NotificationQueue.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }

    // MARK: - Change sets

    /// Ends the current flush now: everything recorded so far becomes one change set, delivered to
    /// the `onChanges` listeners. Returns it, or nil when nothing was recorded.
    @discardableResult
    public func flush() -> ChangeSet? {
        let order = pendingOrder
        let building = pending
        pendingOrder.removeAll()
        pending.removeAll()
        leftThisFlush.removeAll()
        let message = flushMessage
        let atomic = flushAtomic
        flushMessage = nil
        flushAtomic = false
        var fragments: [SyncFragment] = []
        var changes: [ChangeSet.Change] = []
        for id in order {
            guard let entry = building[id] else { continue }
            let object = entry.object
            let properties = object.info.properties
            switch entry.kind {
            case .add:
                fragments.append(object.addFragment())
            case .change:
                var values: [String: JSON] = [:]
                var bases: [String: [UUID]] = [:]
                for index in entry.touched {
                    let property = properties[index]
                    let new = object.value(at: index)
                    guard let old = entry.originals[index] else { continue }
                    let oldWire = property.storage.wireValue(of: old)
                    let newWire = property.storage.wireValue(in: object, offset: property.offset)
                    guard oldWire != newWire else { continue }
                    values[property.name] = newWire
                    if let base = entry.bases[index] { bases[property.name] = base }
                    changes.append(ChangeSet.Change(object: object, property: index, old: old, new: new))
                }
                guard !values.isEmpty else { continue }
                fragments.append(SyncFragment(kind: .change, uuid: object.uuid, className: object.className,
                                              properties: values, bases: bases.isEmpty ? nil : bases))
            }
        }
        guard !fragments.isEmpty else { return nil }
        let changeSet = ChangeSet(fragments: fragments, changes: changes, message: message, isAtomic: atomic,
                                  origin: .local, state: isSynced ? .syncing : .completed, scope: self)
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

    private func publish(_ changeSet: ChangeSet) {
        history.append(changeSet)
        if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
        listeners.notify(changeSet)
        for continuation in continuations.values { continuation.yield(changeSet) }
    }

    /// Calls `body` with every change set, local and remote, after the turn in which it was made.
    @discardableResult
    public func onChanges(_ observer: AnyObject, _ body: @escaping @MainActor (ChangeSet) -> Void) -> ObservationToken {
        listeners.add(observer, body)
    }

    /// Every change set from now on, as an `AsyncSequence`.
    public var changeSets: AsyncStream<ChangeSet> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChangeSet.self)
        let id = UUID()
        continuations[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.continuations[id] = nil }
        }
        return stream
    }

    /// Runs `changes` as one change set with `message` (what is pending is flushed first).
    @discardableResult
    public func modify(message: String? = nil, _ changes: () throws -> Void) rethrows -> ChangeSet? {
        try modify(message: message, atomic: false, changes)
    }

    /// Runs `changes` as one atomic change set: the server applies all of it or none of it.
    @discardableResult
    public func modifyAtomically(message: String? = nil, _ changes: () throws -> Void) rethrows -> ChangeSet? {
        try modify(message: message, atomic: true, changes)
    }

    private func modify(message: String?, atomic: Bool, _ changes: () throws -> Void) rethrows -> ChangeSet? {
        flush()
        defer { flushMessage = nil; flushAtomic = false }
        try changes()
        flushMessage = message
        flushAtomic = atomic
        return flush()
    }

    // MARK: - Undo and redo

    private var isReplaying = false

    /// Whether there is a local change set to undo.
    public var canUndo: Bool { !undoStack.isEmpty }
    /// Whether there is an undone change set to redo.
    public var canRedo: Bool { !redoStack.isEmpty }

    /// Reverts the local user's most recent change set as a new change set that syncs like any
    /// other. Remote changes are not undone. Returns the new change set.
    @discardableResult
    public func undo() -> ChangeSet? {
        flush()  // what is pending is the most recent change set: undo that one
        guard let last = undoStack.popLast() else { return nil }
        let result = replay(last, message: "Undo" + (last.message.map { " \($0)" } ?? ""), values: \.old)
        if result != nil { redoStack.append(last) }
        return result
    }

    /// Re-applies the most recently undone change set as a new change set.
    @discardableResult
    public func redo() -> ChangeSet? {
        flush()
        guard let last = redoStack.popLast() else { return nil }
        let result = replay(last, message: "Redo" + (last.message.map { " \($0)" } ?? ""), values: \.new)
        if result != nil { undoStack.append(last) }
        return result
    }

    private func replay(_ changeSet: ChangeSet, message: String, values: KeyPath<ChangeSet.Change, Any>) -> ChangeSet? {
        flush()
        isReplaying = true
        defer { isReplaying = false }
        let ordered = values == \ChangeSet.Change.old ? changeSet.changes.reversed() : changeSet.changes
        return modify(message: message, atomic: changeSet.isAtomic) {
            // Objects out of any tree get their values too: the replay may bring them back, and
            // their `add` must carry what the undo restored.
            for change in ordered where change.object.scope === self || change.object === root || change.object.scope == nil {
                change.object.setValue(change[keyPath: values], at: change.property)
            }
        }
    }

    // MARK: - Applying remote fragments

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
    /// set holds, PROTOCOL.md §8.3).
    func apply(_ fragments: [SyncFragment], applyDefaults: Bool,
               redirect: ((ModelObject, Int, Any) -> Any?)? = nil) throws(ModelError) -> ApplyReport {
        var report = ApplyReport()
        // Pass 1: find or create every added object.
        var created: [UUID: ModelObject] = [:]
        for fragment in fragments where fragment.kind == .add {
            if objects[fragment.uuid] != nil || created[fragment.uuid] != nil { continue }
            if let held = retired[fragment.uuid]?.object, held.className == fragment.className {
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

    /// Makes room for `additional` more attached objects (a restore about to attach them). O(objects).
    func reserveObjects(_ additional: Int) {
        objects.reserveCapacity(objects.count + additional)
    }

    /// Local change sets restored from a fragment log that the server never acknowledged; the sync
    /// layer sends them once the scope is fetched.
    var restoredPending: [ChangeSet] = []

    /// Restores a local change set from a fragment log that was still syncing when the log was
    /// written, exactly as it was made: its own fragments, in their order, are what the sync layer
    /// sends once the scope is fetched (so a change set that references an object a later one adds
    /// never goes out before it). Unless `isApplied` (a compacted record, whose values the log's
    /// snapshot already holds), the fragments are applied first, as remote ones (nothing is recorded).
    ///
    /// The returned change set is `syncing`; its originals are the values before it (a collection
    /// with a recorded base takes the base, for the server's three-way merge), so a revert or a
    /// rebase works as for a change set made in this process. It goes to `restoredPending` (not to
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
                    if let decoded = try? info.properties[index].storage.decode(wire, property: name, resolver: { self.objects[$0] }) {
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
        restoredPending.append(changeSet)
        return changeSet
    }


    /// Applies a full state (PROTOCOL.md §3.4): the root takes over `rootUUID`, properties a fragment
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
    }

    // MARK: - State

    /// The whole tree as `add` fragments in pre-order from the root, each object once.
    public func snapshot() -> [SyncFragment] {
        guard let root else { return [] }
        var fragments: [SyncFragment] = []
        var seen = Set<ObjectIdentifier>()
        var stack: [ModelObject] = [root]
        while let object = stack.popLast() {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            fragments.append(object.addFragment())
            stack.append(contentsOf: object.syncedChildObjects.reversed())
        }
        return fragments
    }

    /// The whole state as one JSON value: `{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}`.
    /// Two replicas hold the same tree exactly when their states are equal.
    public func stateJSON() -> JSON {
        var objects: [String: JSON] = [:]
        for fragment in snapshot() {
            objects[fragment.uuid.uuidString.lowercased()] = .object([
                "clsName": .string(fragment.className), "properties": .object(fragment.properties),
            ])
        }
        return .object(["root": root.map { .string($0.uuid.uuidString.lowercased()) } ?? .null, "objects": .object(objects)])
    }
}
