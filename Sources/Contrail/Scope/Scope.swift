import ContrailSupport
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
public final class Scope: ModelObjectHost {
    /// The scope's name (what clients fetch).
    public let name: String

    /// The root of the tree. Setting it attaches the new tree and detaches the old one. An object
    /// belongs to one scope at most: a new root that is a member of another scope moves here with
    /// everything below it, and that scope drops every reference it held to them (its holders
    /// record the change; a moved root leaves it without a root). When a non-optional reference
    /// in the other scope holds what would move, the set is refused: `root` keeps its value and
    /// `onLinkRefused` hears why (`ScopeMembershipError`).
    public var root: ModelObject? {
        didSet {
            guard oldValue !== root else { return }
            if let root, let refusal = ModelObject.refusalToLink(CollectionOfOne(root), into: self) {
                self.root = oldValue  // inside its own didSet: stored directly, no second didSet
                refuseLink(refusal)
                return
            }
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

    /// Whether another layer settles this scope's local change sets after they are made (the sync
    /// layer sets it while it syncs the scope): then they start `syncing` and wait for its
    /// `ChangeSet.settle(_:)`; otherwise they are `completed` at once. The scope knows nothing of
    /// who settles them.
    package var awaitsSettlement = false
    /// The layer that syncs this scope now, if any (set and cleared by it, never called by the
    /// scope): what `markRevision(_:)` reaches the server through.
    package weak var syncOwner: AnyObject?

    /// Who else is in the scope and what this replica shows them: ephemeral values that are never
    /// recorded (Protocol §8.20; they travel once a session syncs the scope).
    public private(set) lazy var presence = ScopePresence()

    /// Upper bound of `history` and of the undo stack (older change sets are dropped from memory, not from a log).
    public var historyLimit = 1000
    /// The last version of each collection a change set kept, so that the next one keeps an edit.
    var collectionChains = CollectionChains()

    /// Change sets in the order they were made or applied, oldest first.
    public internal(set) var history: [ChangeSet] = []

    var objects: [UUID: ModelObject] = [:]
    /// What the scope holds that its app does not understand (`Scope+Unknown.swift`).
    var unknown = UnknownState()
    /// Class names this scope treats as unknown although they are registered: a replica standing
    /// for an app version without them (the fuzzer, tests). Empty in an app.
    package var unknownClassNames: Set<String> = []
    /// Objects that left the tree, by UUID, while something else keeps them alive (a pending change
    /// set, the undo stack, the app). A remote fragment naming one of them brings back that same
    /// object rather than a twin, so edits made on it stay attached to what the server knows.
    var retired: [UUID: WeakObject] = [:]
    var retiredPruneThreshold = 64
    /// Objects the server already knew that left the tree during the current flush, with the fragment
    /// they had pending: a return within the same flush is a move, which sends no `add`.
    var leftThisFlush: [ObjectIdentifier: PendingChange?] = [:]
    /// Main actor only, never held across a call that reaches it again: no dynamic exclusivity check.
    @exclusivity(unchecked) var pending = PendingFragments()
    /// How many `applyingRemote` calls are running; sets are recorded only at 0 (which
    /// `recordsSets` tells the members without a call).
    var remoteDepth = 0 {
        didSet { recordsSets = remoteDepth == 0 }
    }
    var isRecordingAttach = true
    let listeners = ObserverList<ChangeSet>()
    let linkRefusals = ObserverList<ScopeMembershipError>()
    /// When each throttled property was last recorded, on `clock`.
    var lastRecorded: [ChangeKey: Duration] = [:]
    var throttled: Set<ChangeKey> = []
    var undoStack: [ChangeSet] = []
    var redoStack: [ChangeSet] = []
    var flushMessage: String?
    var flushAtomic = false
    /// Local change sets restored from a fragment log that were never settled, in order, until
    /// the layer that settles the scope's change sets takes them (the log takes out one that a
    /// later record says settled).
    package var unsettledRestored: [ChangeSet] = []

    /// Told when change sets are first sent together as one coalesced message under an id (the
    /// fragment log records it, so a restart sends them together again under that id).
    package var onBatchSent: ((UUID, [ChangeSet]) -> Void)?

    /// Whether `undo`/`redo` is replaying a change set (it goes on neither stack as a new edit).
    var isReplaying = false
    /// The procedure call the next non-empty flush makes (`modify(procedure:)`).
    var flushProcedure: ProcedureCall?

    /// The live queries over this scope (`query(_:where:sortedBy:window:)`); nil until the first.
    var queryHub: QueryHub?

    /// The clock properties' minimum sync intervals run on.
    let clock: ElapsedClock

    /// An empty scope (no root yet) named `name`, the name a server knows it by. A property's
    /// minimum sync interval (`@Property(minSyncInterval:)`) runs on `clock` (a test passes a
    /// virtual one).
    public init(name: String, clock: any Clock<Duration> = ContinuousClock()) {
        self.name = name
        self.clock = ElapsedClock(clock)
        super.init()
    }

    /// Members hold their scope unretained (`ModelTracking.host`): clear it on every member still
    /// attached, whether reached from the root or known by uuid. O(members).
    isolated deinit {
        // An object is expanded only when it is cleared, so each is visited once, cycles included.
        var stack: [ModelObject] = root.map { [$0] } ?? []
        while let object = stack.popLast() {
            guard object._tracking?.leave(dying: self) == true else { continue }
            stack.append(contentsOf: object.syncedChildObjects)
        }
        for object in objects.values { _ = object._tracking?.leave(dying: self) }
    }

    // MARK: - What members report (the model layer knows the scope as their `ModelObjectHost`)

    override var hostName: String { name }

    override var hostRoot: ModelObject? {
        get { root }
        set { root = newValue }
    }

    override func didAttach(_ object: ModelObject) { memberAttached(object) }

    override func didDetach(_ object: ModelObject) { memberDetached(object) }

    override func memberChanged(_ object: ModelObject) { queryHub?.changed(object) }

    /// Records that `property` of `object` (whose tracking record is `tracking`) changed from `old`
    /// (`Scope+Recording.swift` has the rest of recording).
    override func record(_ object: ModelObject, tracking: ModelTracking, property: Int, old: consuming Any) {
        guard remoteDepth == 0 else { return }
        let options = tracking.info.options[property]
        guard !options.isLocal else { return }
        if options.minSyncIntervalMilliseconds > 0, pending[object]?.kind != .add,
           !passesThrottle(object, property: property, interval: options.minSyncIntervalMilliseconds, old: old) {
            return
        }
        touch(object, tracking: tracking, property: property, old: old)
    }

    override func refuseLink(_ error: ScopeMembershipError) { reportRefusedLink(error) }

    /// Known objects that only what the app does not understand reaches stay (`Scope+Unknown.swift`).
    override func keepsAttached(_ object: ModelObject) -> Bool {
        !unknown.held.isEmpty && unknown.held.contains(object.uuid)
    }

    // MARK: - Lookup

    /// The attached object with this UUID.
    public func object(for uuid: UUID) -> ModelObject? { objects[uuid] }

    /// Every attached object (unordered).
    public var allObjects: [ModelObject] { Array(objects.values) }

    /// The number of attached objects.
    public var count: Int { objects.count }

    // MARK: - State

    /// The whole tree as `add` fragments in pre-order from the root, each object once, with what
    /// the scope keeps that its app does not understand (objects of unknown classes, unknown values).
    public func snapshot() -> [SyncFragment] {
        guard let root else { return [] }
        if !unknown.isEmpty { return snapshotWithUnknown(from: root) }
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
            objects[fragment.uuid.wireString] = .object([
                "clsName": .string(fragment.className), "properties": .object(fragment.properties),
            ])
        }
        return .object(["root": root.map { .string($0.uuid.wireString) } ?? .null, "objects": .object(objects)])
    }
}
