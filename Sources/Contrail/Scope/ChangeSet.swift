import Foundation

/// The fragments of one flush of a scope, with what they replaced (for revert and undo).
///
/// Local change sets start `syncing` when another layer settles the scope's change sets (the sync
/// layer, from the server's reply, while the scope is synced), and `completed` otherwise. Observe `state` with `onStateChange` or
/// `await changeSet.settled()`.
@MainActor
public final class ChangeSet: Encodable {
    /// Where a change set came from.
    public enum Origin: String, Sendable, Codable {
        /// Made by this app (including undo and redo).
        case local
        /// Applied from elsewhere (a server, a log).
        case remote
    }

    /// Where a change set stands with whatever settles it (the server, in a synced scope).
    public enum State: String, Sendable, Codable {
        /// Sent or waiting to be sent; the server has not answered yet.
        case syncing
        /// Applied by the server (or made in a scope that is not synced).
        case completed
        /// Rejected by the server: every change was undone locally.
        case reverted
        /// Partly rejected by the server: the rejected fragments were undone locally.
        case partiallyReverted
    }

    /// One property change: the object, the property index, and the values before and after.
    @MainActor
    struct Change {
        /// A value as kept: as it is, or a collection of models as a ``CollectionVersion`` (an
        /// edit of the value the change set before it left: pending appends to a long list do not
        /// each hold the list), rebuilt when read.
        enum Value {
            case plain(Any)
            case models(CollectionVersion)
        }

        let object: ModelObject
        let property: Int
        /// What the property held before, as kept.
        private(set) var original: Value
        /// What it held after, as kept.
        let result: Value

        /// A change between two values kept as they are.
        init(object: ModelObject, property: Int, old: Any, new: Any) {
            self.init(object: object, property: property, original: .plain(old), result: .plain(new))
        }

        /// A change between two values as kept.
        init(object: ModelObject, property: Int, original: Value, result: Value) {
            self.object = object
            self.property = property
            self.original = original
            self.result = result
        }

        /// What the property held before; the sync layer rewrites it when a remote value or a
        /// rebase replaces the original (Protocol §8.3, §4.9). O(n) for a collection kept as a version.
        var old: Any {
            get { value(original) }
            set { original = .plain(newValue) }
        }

        /// What the property held after. O(n) for a collection kept as a version.
        var new: Any { value(result) }

        /// Sets the original as kept (a version stays a version).
        mutating func setOriginal(_ value: Value) { original = value }

        /// Whether this change is to one of `objects` (every change is, when nil). O(1).
        func touches(_ objects: Set<UUID>?) -> Bool { objects?.contains(object.uuid) ?? true }

        /// Whether the value after is a shared text (without rebuilding a collection). O(1).
        var isSharedText: Bool {
            if case .plain(let value) = result { return value is SharedText }
            return false
        }

        /// The UUIDs of the models the original holds (a collection's elements, in order). O(n).
        var originalElements: [UUID] {
            switch original {
            case .plain(let value): ((value as? any PropertyValue)?.models ?? []).map(\.uuid)
            case .models(let version): version.elements
            }
        }

        /// The models the values before and after hold (with, for versions, others held alongside). O(n).
        var models: [ModelObject] {
            [result, original].flatMap { kept -> [ModelObject] in
                switch kept {
                case .plain(let value): (value as? any PropertyValue)?.models ?? []
                case .models(let version): Array(version.models.values)
                }
            }
        }

        private func value(_ kept: Value) -> Any {
            switch kept {
            case .plain(let value):
                return value
            case .models(let version):
                let byUUID = version.models
                let scope = object.scope
                let info = object.info
                let wire = CompactFragments.wire(version.elements)
                let resolver: ModelResolver = { uuid in byUUID[uuid] ?? scope?.object(for: uuid) }
                return (try? info.coder(at: property).decode(wire, property: info.properties[property].name, resolver: resolver))
                    ?? object.value(at: property)
            }
        }
    }

    /// The fragments, one per object, in order of first touch. Kept compactly (a collection as an
    /// edit of the value the change set before it left, ``CompactFragments``) and rebuilt here:
    /// O(size of the fragments + n per collection of n elements), more for a change set far back in
    /// a chain of pending edits whose values were not rebuilt in order.
    public nonisolated var fragments: [SyncFragment] { stored.whole }
    /// The fragments as kept.
    nonisolated let stored: CompactFragments
    /// The message given to `modify(message:)`, if any.
    public nonisolated let message: String?
    /// True for `modifyAtomically`: the server applies all fragments or none.
    public nonisolated let isAtomic: Bool
    /// The procedure this change set calls (`Model.name`, from `Scope.modify(procedure:)`), if any.
    public internal(set) var procedure: String?
    /// Whether this app made the change set or it was applied from elsewhere.
    public nonisolated let origin: Origin
    /// When the change set was made.
    public nonisolated let date: Date
    /// The change set's identity, sent with it (`ScopeSync.changeSetID`) so that a server applies it
    /// once however often it is sent.
    public nonisolated let id: UUID
    /// The id of the message it was first sent in, once sent: a coalesced message's, or its own
    /// ``id`` when it went alone. Kept in the fragment log, so that after a reconnect or a restart
    /// it goes again in that message, under that id, and a server that applied it answers a repeat
    /// instead of applying it twice.
    package var sentBatch: UUID?
    /// Its sequence number in the attached fragment log while it is pending there.
    package var logSequence: Int?
    /// Where the change set stands with the server (see `onStateChange` and `settled()`).
    public private(set) var state: State
    /// Why the change set was refused, whole (`.reverted`) or in part (`.partiallyReverted`); nil
    /// while syncing, when completed, and when only ``drops`` explain a partial revert.
    public private(set) var rejection: Rejection?
    /// The elements it inserted or moved that the server's collection merge left out (a concurrent
    /// removal won, Protocol §8.4): non-empty only in a `.partiallyReverted` change set.
    public private(set) var drops: [Drop] = []
    var changes: [Change]
    /// The objects whose reference's kept whole value (it named an object of an unknown class,
    /// §8.23) this change set replaced when it was made: a revert cannot give that value back (the
    /// scope forgot the object it named), so the session fetches the scope again.
    var replacedKeptReferences: Set<UUID> = []
    private let stateObservers = ObserverList<State>()
    private var waiters: [CheckedContinuation<State, Never>] = []
    weak var scope: Scope?

    convenience init(fragments: [SyncFragment], changes: [Change], message: String?, isAtomic: Bool, origin: Origin, state: State,
                     scope: Scope?, id: UUID = .random()) {
        let stored = if let scope { CompactFragments(fragments, chains: &scope.collectionChains) } else { CompactFragments(whole: fragments) }
        self.init(stored: stored, changes: changes, message: message, isAtomic: isAtomic, origin: origin, state: state, scope: scope, id: id)
    }

    /// A change set of fragments as kept (the flush keeps its collections as versions from the start).
    init(stored: CompactFragments, changes: [Change], message: String?, isAtomic: Bool, origin: Origin, state: State, scope: Scope?,
         id: UUID = .random()) {
        self.stored = stored
        self.changes = changes
        self.message = message
        self.isAtomic = isAtomic
        self.origin = origin
        self.state = state
        self.scope = scope
        self.date = Date()
        self.id = id
    }

    /// Encodes `{"fragments", "atomic", "message"?, "origin"}` (the state is live, so it is left out).
    public nonisolated func encode(to encoder: any Encoder) throws {
        try content.encode(to: encoder)
    }

    private nonisolated var content: JSON {
        var object: [String: JSON] = [
            "fragments": .array(fragments.map(\.json)),
            "atomic": .bool(isAtomic),
            "origin": .string(origin.rawValue),
        ]
        if let message { object["message"] = .string(message) }
        return .object(object)
    }

    /// Whether the change set is still waiting for the server.
    public var isSettled: Bool { state != .syncing }

    /// Calls `body` whenever the state changes, while `observer` lives (or until the token is cancelled).
    @discardableResult
    public func onStateChange(_ observer: AnyObject, _ body: @escaping @MainActor (State) -> Void) -> ObservationToken {
        stateObservers.add(observer, body)
    }

    /// Returns once the change set is completed, reverted or partially reverted.
    public func settled() async -> State {
        if isSettled { return state }
        return await withCheckedContinuation { waiters.append($0) }
    }

    /// Sets the state with why it was refused, if it was (the layer that settles the scope's change
    /// sets calls this), and notifies.
    package func settle(_ newState: State, rejection: Rejection? = nil, drops: [Drop] = []) {
        guard newState != state else { return }
        if newState != .syncing {
            self.rejection = rejection
            self.drops = drops
        }
        state = newState
        stateObservers.notify(newState)
        if isSettled {
            let waiting = waiters
            waiters.removeAll()
            for waiter in waiting { waiter.resume(returning: newState) }
        }
    }

    /// Restores the values this change set replaced, without recording anything (the replica goes
    /// back to what the server holds), except that a shared text's edit is rolled back as a local
    /// edit, which gives the server the ids of the characters it never got (`SharedText`).
    /// Changes to (object, property) pairs in `excluding` stay. Marks the change set `reverted`.
    public func revert() {
        revert(excluding: [])
        settle(.reverted)
    }

    /// Restores originals except for the keys in `excluding` (keys still pending in later change sets).
    func revert(excluding: Set<ChangeKey>, onlyObjects: Set<UUID>? = nil) {
        let restore = changes.reversed().filter { change in
            !excluding.contains(ChangeKey(change.object, change.property)) && change.touches(onlyObjects)
        }
        let apply = {
            for change in restore where !(change.old is SharedText) { change.object.setValue(change.old, at: change.property) }
        }
        if let scope {
            scope.applyingRemote(apply)
            // A collection's kept whole value (§8.23) goes back with it; what only it reached leaves.
            if !scope.unknown.extras.isEmpty {
                for change in restore { scope.restoreKeptWhole(of: change.object, at: change.property) }
                scope.reconcileUnknown()
            }
        } else {
            apply()
        }
        // Recorded, not applied as remote: the rollback's operations must reach the server.
        for change in restore {
            if let rollBack = (change.old as? SharedText)?.rollingBack { change.object.setValue(rollBack, at: change.property) }
        }
    }

    /// The change set as JSON: `{"fragments": […], "atomic": Bool, "message"?: String, "origin", "state"}`.
    /// The fragments are exactly those a `ScopeSync` carries (Protocol §2.6).
    public var json: JSON {
        guard case .object(var object) = content else { return content }
        object["state"] = .string(state.rawValue)
        return .object(object)
    }

}

/// An (object, property) pair.
struct ChangeKey: Hashable {
    let object: ObjectIdentifier
    let property: Int

    @MainActor init(_ object: ModelObject, _ property: Int) {
        self.object = ObjectIdentifier(object)
        self.property = property
    }
}
