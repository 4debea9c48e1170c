import ContrailWire
import Foundation

/// The state of one scope on a schema-agnostic server: objects by UUID (class name + properties),
/// the root, and the kind learnt for each (class, property). Applies change sets as §4.5 and §8
/// describe. A value type: each ``HostedScope`` owns one (a ``LocalScope`` while loaded, a
/// ``ClusterScope`` as its replica) and serialises access to it.
struct ScopeStore: Sendable {
    /// The root object's UUID.
    private(set) var rootUUID: UUID
    /// Every object of the scope (all reachable from the root), held compactly (see ``ObjectTable``).
    private(set) var objects = ObjectTable()
    /// The kind learnt for each (class, property).
    private(set) var kinds: [KindKey: PropertyKind]
    /// The change sets applied most recently, by id (kept in snapshots and log records).
    private(set) var applied = RecentChangeSets()
    /// The last state of the objects deleted most recently, to bring one back as the server last had
    /// it (an `add` of it, or a move of it by a client that knew it).
    private(set) var deleted = DeletedObjects()
    /// The number of change sets the scope has accepted since it was created: the history's
    /// sequence number of the last one (0: none yet). Kept in snapshots and log records.
    private(set) var sequence = 0
    /// The named revisions marked on the scope, oldest first (kept in snapshots).
    private(set) var revisions: [ScopeRevision] = []
    /// Whether some object may be unreachable from the root: a change set created objects without
    /// a collection after it (none of its writes changed a reference the scope held), or the scope
    /// was restored. A collection clears it.
    private var mayHoldUnreachable = true
    /// Whether a commit skips a collection that can remove nothing (off only in the test that
    /// compares both ways).
    var skipsNeedlessCollections = true
    /// How many commits changed a reference and skipped the collection (for that test).
    private(set) var skippedCollections = 0

    /// A new scope: a root with a fresh UUID and no class name yet (the first fragment naming the
    /// root fills it in).
    init(rootUUID: UUID = UUID(), deletedCapacity: Int = 10_000) {
        self.rootUUID = rootUUID
        self.deleted = DeletedObjects(capacity: deletedCapacity)
        self.kinds = [:]
        self.objects.set(StoredObject(className: "", properties: [:]), for: rootUUID)
    }

    /// A scope restored from a snapshot: `kinds`, and no object but an unnamed root (``hold(_:as:)``
    /// adds them).
    init(rootUUID: UUID, kinds: [KindKey: PropertyKind]) {
        self.rootUUID = rootUUID
        self.kinds = kinds
        self.objects.set(StoredObject(className: "", properties: [:]), for: rootUUID)
    }

    /// Holds `object` as `uuid` (in the row of its shape). O(properties), amortised.
    mutating func hold(_ object: StoredObject, as uuid: UUID) { objects.set(object, for: uuid) }

    /// Makes room for `count` objects. O(count).
    mutating func reserveCapacity(_ count: Int) { objects.reserveCapacity(count) }

    /// Gives back the spare capacity of the objects' rows (after a load). O(objects).
    mutating func shrinkToFit() { objects.shrinkToFit() }

    /// The number of distinct (class, property names) the store's objects have (for tests).
    var shapeCount: Int { objects.shapeCount }

    /// The number of objects, the root included.
    var objectCount: Int { objects.count }

    // MARK: Applying a change set

    /// Applies one change set in message order. A fragment that fails changes nothing; with
    /// `atomic` any failure rejects them all. Orphans are collected afterwards (§3.3). A change set
    /// whose `changeSetID` was applied already changes nothing: see ``answerDuplicate(_:)``.
    mutating func apply(_ fragments: [SyncFragment], atomic: Bool, maxObjects: Int, changeSetID: UUID? = nil) -> SyncOutcome {
        if let changeSetID, applied.contains(changeSetID) { return answerDuplicate(fragments) }
        let outcome = applyOnce(fragments, atomic: atomic, maxObjects: maxObjects)
        // Only a change set that changed something counts as applied: one rejected whole is
        // validated afresh when it comes again (its first reply may never have arrived), rather
        // than answered as if it had been accepted.
        if let changeSetID, !outcome.accepted.isEmpty { applied.insert(changeSetID) }
        return outcome
    }

    /// The reply to a change set applied before (whose first reply may never have arrived): every
    /// fragment of an object the scope holds accepted, with the scope's current value of each
    /// property it names where that differs from what it sends, so the sender ends up where the
    /// scope is; a fragment of an object it does not hold rejected. Nothing changes.
    func answerDuplicate(_ fragments: [SyncFragment]) -> SyncOutcome {
        let replies = fragments.map { fragment -> FragmentReply in
            // An object the scope does not hold now: its fragment may have failed the first time
            // (the scope had deleted it), and whatever it did is gone now; either way it is not in
            // the scope, so the sender must not count it as applied.
            guard let object = objects[fragment.uuid] else {
                return .rejected(WireErrorBody(message: "ModelObject not found (the change set was applied before; the scope does not hold this object now)"))
            }
            var modifications: [String: JSON] = [:]
            for (key, sent) in fragment.properties {
                if let current = object[key], current != sent { modifications[key] = current }
            }
            // A collection sent as an edit (§8.24) gets its current value: the edit's result is not known here.
            for key in (fragment.collectionEdits ?? [:]).keys {
                if let current = object[key] { modifications[key] = current }
            }
            // So does a counter sent as a delta (§8.21): a sender that fetched the scope after the first
            // time may hold the delta twice (once in the fetched total, once as pending), and its
            // sent total can equal the scope's by chance.
            for key in (fragment.counterDeltas ?? [:]).keys {
                if let current = object[key] { modifications[key] = current }
            }
            return FragmentReply(error: nil, modifications: modifications.isEmpty ? nil : modifications)
        }
        return SyncOutcome(replies: replies, accepted: [], repeated: true)
    }

    /// Whether the change set `id` was applied (it is among the recent ones kept).
    func wasApplied(_ id: UUID) -> Bool { applied.contains(id) }

    /// The elements of collection `key` of object `uuid`, if the scope holds it as an array of UUIDs
    /// (nil for a missing object or key, or any other value). O(n).
    func collectionValue(_ uuid: UUID, _ key: String) -> [UUID]? {
        switch objects[uuid]?.stored(key) {
        case .uuids(let uuids)?: uuids
        case .other(let box)?: box.json.uuidElements
        default: nil
        }
    }

    /// Counts one more accepted change set and returns its sequence number (``sequence``).
    mutating func advanceSequence() -> Int {
        sequence += 1
        return sequence
    }

    /// Sets the sequence number reached (a log replay or a snapshot restore).
    mutating func restoreSequence(_ value: Int) { sequence = value }

    /// Adds a named revision (the caller checked that its label is new).
    mutating func mark(_ revision: ScopeRevision) { revisions.append(revision) }

    /// The revision labelled `label`, if marked. O(revisions).
    func revision(_ label: String) -> ScopeRevision? { revisions.last { $0.label == label } }

    /// Remembers that the change set `id` was applied (a log replay).
    mutating func rememberApplied(_ id: UUID) { applied.insert(id) }

    /// Remembers the last state of a deleted object (a snapshot restore), unless the scope holds it.
    mutating func rememberDeleted(_ uuid: UUID, _ object: StoredObject) {
        guard !objects.contains(uuid) else { return }
        var object = object
        // The shape's shared instance, when a live object has it.
        object.adopt(objects.canonical(object.shape))
        deleted.insert(uuid, object)
    }

    private mutating func applyOnce(_ fragments: [SyncFragment], atomic: Bool, maxObjects: Int) -> SyncOutcome {
        var forced: [Int: WireErrorBody] = [:]
        var pass = validate(fragments, forced: forced, maxObjects: maxObjects)
        // Rejections can cascade (a rejected add leaves references to it dangling, or a new object
        // without a parent): repeat until nothing new fails. Each round rejects at least one more.
        while true {
            var newFailures = pass.followUpFailures(fragments: fragments)
            if atomic, let first = pass.firstFailure(among: fragments.count, extra: newFailures) {
                let error = WireErrorBody.couldNotApplySyncMessage(
                    "atomic change set rejected, fragment \(first.index) failed: \(first.error.message)")
                for index in fragments.indices where pass.plans[index].error == nil && newFailures[index] == nil {
                    newFailures[index] = error
                }
            }
            if newFailures.isEmpty { break }
            forced.merge(newFailures) { old, _ in old }
            pass = validate(fragments, forced: forced, maxObjects: maxObjects)
        }
        return commit(pass, fragments: fragments)
    }

    private mutating func commit(_ pass: ValidationPass, fragments: [SyncFragment]) -> SyncOutcome {
        var replies: [FragmentReply] = []
        replies.reserveCapacity(fragments.count)
        var accepted: [SyncFragment] = []
        accepted.reserveCapacity(fragments.count)
        var revivedTexts: [SyncFragment] = []
        for (index, plan) in pass.plans.enumerated() {
            if let error = plan.error {
                replies.append(.rejected(error))
                continue
            }
            replies.append(FragmentReply(error: nil, modifications: plan.modifications.isEmpty ? nil : plan.modifications))
            let fragment = fragments[index]
            let kind: SyncFragment.Kind = plan.isNew ? .add : .change
            if kind == .change, plan.values.isEmpty { continue }
            // An add carries its shared texts' whole states (§8.21), the server's: a revived object
            // keeps the characters it had, which the sender's own add may lack.
            var texts = plan.texts
            if kind == .add, let object = pass.working[fragment.uuid] { texts.merge(object.texts) { _, state in state } }
            accepted.append(SyncFragment(kind: kind, uuid: fragment.uuid, className: plan.className, properties: plan.values,
                                         textOperations: texts.isEmpty ? nil : texts,
                                         counterDeltas: plan.counters.isEmpty ? nil : plan.counters))
            // Its sender, which ignores a text's plain value in the reply, gets them before the reply.
            if plan.revived, let object = pass.working[fragment.uuid], !object.texts.isEmpty {
                revivedTexts.append(SyncFragment(kind: .add, uuid: fragment.uuid, className: plan.className,
                                                 properties: object.properties, textOperations: object.texts))
            }
        }
        guard !accepted.isEmpty else { return SyncOutcome(replies: replies, accepted: []) }
        for (uuid, object) in pass.working { hold(object, as: uuid) }
        kinds.merge(pass.kinds) { _, new in new }
        // Collected whenever a reference the scope held changed (or an object came back), unless
        // nothing can have become unreachable: no object was unreachable before, no value lost an
        // object it named, and every created object is reached from the objects held before. The
        // collection would then remove nothing, and it is O(objects): skipping it keeps an append
        // to a long collection from walking the whole scope.
        if !pass.revived.isEmpty
            || (pass.referenceChanged && (!skipsNeedlessCollections || pass.mayOrphan || mayHoldUnreachable
                                          || !Self.createdObjectsAreReached(pass, fragments))) {
            collectGarbage()
            mayHoldUnreachable = false
        } else if !pass.referenceChanged, pass.plans.contains(where: { $0.error == nil && $0.isNew }) {
            mayHoldUnreachable = true
        } else if pass.referenceChanged {
            skippedCollections += 1
        }
        // Objects brought back without a fragment of their own (what a revived object referenced)
        // reach the other replicas as an `add` of their last state, after the change set's fragments.
        var revived: [SyncFragment] = []
        for uuid in pass.revived {
            guard let object = objects[uuid] else { continue }
            revived.append(SyncFragment(kind: .add, uuid: uuid, className: object.className, properties: object.properties,
                                        textOperations: object.texts.isEmpty ? nil : object.texts))
        }
        for uuid in pass.working.keys where objects.contains(uuid) { deleted.remove(uuid) }
        return SyncOutcome(replies: replies, accepted: accepted + revived, revived: revivedTexts + revived)
    }

    /// Whether every object `pass` creates is named by a value it writes to an object the scope held
    /// before, or by one it creates that is. O(references written).
    private static func createdObjectsAreReached(_ pass: ValidationPass, _ fragments: [SyncFragment]) -> Bool {
        var created = UUIDTable<Int>()
        for (index, plan) in pass.plans.enumerated() where plan.error == nil && plan.isNew {
            _ = created.insert(index, for: fragments[index].uuid)
        }
        guard created.count > 0 else { return true }
        var reached = UUIDTable<Bool>()
        var stack: [Int] = []
        func reach(_ plan: ValidationPass.Plan) {
            for (_, target) in plan.references {
                if let index = created[target], reached.insert(true, for: target) == nil { stack.append(index) }
            }
        }
        for plan in pass.plans where plan.error == nil && !plan.isNew { reach(plan) }
        while let index = stack.popLast() { reach(pass.plans[index]) }
        return reached.count == created.count
    }

    /// Whether `old`, the objects a reference or collection value named, has one that `value` does
    /// not name. O(n): an append is a prefix check.
    private static func dropsReference(_ old: [UUID], keeping value: JSON) -> Bool {
        guard !old.isEmpty else { return false }
        let new = Self.referencedUUIDs(value)
        if new.starts(with: old) { return false }
        var kept = UUIDTable<Bool>(capacity: new.count)
        for uuid in new { _ = kept.insert(true, for: uuid) }
        return old.contains { kept[$0] == nil }
    }

    /// Removes every object not reachable from the root through reference properties.
    mutating func collectGarbage() {
        var reachable: Set<UUID> = [rootUUID]
        reachable.reserveCapacity(objects.count)
        var stack: [UUID] = [rootUUID]
        while let uuid = stack.popLast() {
            forEachReference(of: uuid) { child in
                if objects.contains(child), reachable.insert(child).inserted { stack.append(child) }
            }
        }
        if reachable.count < objects.count {
            for (uuid, object) in objects.removeAll(keeping: reachable.contains) { deleted.insert(uuid, object) }
        }
    }

    /// Calls `body` with each object that object `uuid` references, in property-name order; reads
    /// the object in place. O(properties + references).
    func forEachReference(of uuid: UUID, _ body: (UUID) -> Void) {
        objects.forEachProperty(of: uuid) { className, key, value in
            switch value {
            case .null, .bool, .int, .uint, .double: return
            default: break
            }
            guard let kind = kinds[KindKey(className: className, property: key)], kind.isReference else { return }
            switch value {
            case .uuid(let uuid): body(uuid)
            case .uuids(let uuids): for uuid in uuids { body(uuid) }
            default: for uuid in value.referencedUUIDs { body(uuid) }
            }
        }
    }

    // MARK: Validation

    private func validate(_ fragments: [SyncFragment], forced: [Int: WireErrorBody], maxObjects: Int) -> ValidationPass {
        var pass = ValidationPass(count: fragments.count)
        // Pass 1: adds of unknown UUIDs become temporaries, so references within the message resolve.
        for (index, fragment) in fragments.enumerated() where fragment.kind == .add && !objects.contains(fragment.uuid) {
            if forced[index] != nil { continue }
            if pass.temporaries[fragment.uuid] == nil {
                if objects.count + pass.temporaries.count >= maxObjects {
                    pass.plans[index].error = WireErrorBody.limitExceeded("Scope holds the maximum of \(maxObjects) objects")
                    continue
                }
                pass.temporaries[fragment.uuid] = fragment.className
            }
        }
        let temporaries = pass.temporaries
        let objects = self.objects
        let exists: (UUID) -> Bool = { uuid in objects.contains(uuid) || temporaries[uuid] != nil }
        // What the sender knew of the scope: every element of a base it sent. Such an element that
        // the scope no longer holds was removed concurrently (removal wins, also over a move from
        // another collection), so a merged collection drops it instead of refusing it as a dangling
        // reference (§8.4). Only elements the sender never saw must exist.
        // Made on first use: only an element that names no object asks (most change sets never do).
        var knownSet: Set<UUID>?
        let knownToSender = { (uuid: UUID) -> Bool in
            if knownSet == nil { knownSet = Set(fragments.flatMap { fragment in (fragment.bases ?? [:]).values.flatMap { $0 } }) }
            return knownSet?.contains(uuid) == true
        }
        // A merged collection keeps an element the sender knew that the scope deleted meanwhile when
        // its last state is kept: the move of it into another collection wins over its removal from
        // the one it left, and the object comes back (revived below).
        let deleted = self.deleted
        let existsOrRevivable: (UUID) -> Bool = { uuid in exists(uuid) || (knownToSender(uuid) && deleted[uuid] != nil) }
        // Pass 2: each fragment in message order against the state left by the earlier ones.
        for (index, fragment) in fragments.enumerated() {
            if let error = forced[index] { pass.plans[index].error = error; continue }
            if pass.plans[index].error != nil { continue }
            var target: StoredObject
            if let existing = pass.working[fragment.uuid] ?? objects[fragment.uuid] {
                target = existing
            } else if fragment.kind == .add, pass.temporaries[fragment.uuid] != nil {
                // An object the scope deleted comes back as the server last had it (its values stay,
                // as for an `add` of an object the scope holds), with what it lacks from the sender.
                let last = deleted[fragment.uuid].flatMap { $0.className == fragment.className ? $0 : nil }
                target = StoredObject(className: fragment.className, properties: last?.properties ?? [:], texts: last?.texts ?? [:])
                pass.plans[index].isNew = true
                if let last {
                    pass.plans[index].revived = true
                    pass.plans[index].values = last.properties
                }
            } else {
                pass.plans[index].error = WireErrorBody(message: "ModelObject not found")
                continue
            }
            if target.className.isEmpty { target.className = fragment.className }
            pass.plans[index].className = target.className
            var plan = pass.plans[index]
            var localKinds: [KindKey: PropertyKind] = [:]
            var failed = false
            // An `add` of an object the scope already holds (a resend, or an object that came back
            // while another reference kept it) never overwrites: properties the object has keep their
            // values, and the reply tells the sender what they are.
            let keepsExisting = fragment.kind == .add && (!plan.isNew || plan.revived)
            for key in fragment.properties.keys.sorted() {
                guard var value = fragment.properties[key] else { continue }
                if keepsExisting, let existing = target[key] {
                    if existing != value { plan.modifications[key] = existing }
                    if plan.revived, kinds[KindKey(className: target.className, property: key)]?.isReference == true {
                        for uuid in Self.referencedUUIDs(existing) { plan.references.append((key, uuid)) }
                    }
                    continue
                }
                let kindKey = KindKey(className: target.className, property: key)
                let known = localKinds[kindKey] ?? pass.kinds[kindKey] ?? kinds[kindKey]
                // A collection sent with its base is merged below, where elements the sender knew and
                // the scope no longer holds drop out; only references it never saw must name objects.
                let base = fragment.bases?[key]
                let valueExists: (UUID) -> Bool = base == nil ? exists : { uuid in exists(uuid) || knownToSender(uuid) }
                switch PropertyKind.check(value, key: key, known: known, exists: valueExists) {
                case .failure(let error):
                    plan.error = error
                    failed = true
                case .success(let checked):
                    value = checked.value
                    let kind = checked.kind ?? known
                    if let kind, kind != known { localKinds[kindKey] = kind }
                    if kind?.isReference == true {
                        if let base, kind == .collection,
                           let merged = merge(value, base: base, current: target.stored(key), exists: existsOrRevivable) {
                            // Always sent back: by the time the reply arrives the sender's value may
                            // differ from what it sent (it merged later remote values locally).
                            plan.modifications[key] = merged
                            value = merged
                        }
                        // Compared in the compact form: a long collection is not spelt out as JSON.
                        if let previous = target.stored(key), previous != StoredValue(value) {
                            pass.referenceChanged = true
                            if Self.dropsReference(previous.referencedUUIDs, keeping: value) { pass.mayOrphan = true }
                        }
                        for uuid in Self.referencedUUIDs(value) { plan.references.append((key, uuid)) }
                    }
                    if let error = mergeShared(fragment, key: key, value: &value, target: &target, plan: &plan) {
                        plan.error = error
                        failed = true
                        break
                    }
                    target[key] = value
                    plan.values[key] = value
                }
                if failed { break }
            }
            if failed {
                plan.values = [:]
                plan.modifications = [:]
                plan.references = []
                pass.plans[index] = plan
                continue
            }
            pass.kinds.merge(localKinds) { _, new in new }
            pass.working[fragment.uuid] = target
            pass.plans[index] = plan
        }
        reviveReferencedObjects(&pass)
        return pass
    }

    /// Brings back every deleted object (kept in ``deleted``) that the objects this change set
    /// writes now reference, and what those reference in turn, as the server last had them. O(the
    /// objects written and revived).
    private func reviveReferencedObjects(_ pass: inout ValidationPass) {
        guard deleted.count > 0 else { return }
        var stack = Array(pass.working.keys)
        while let uuid = stack.popLast() {
            guard let object = pass.working[uuid] else { continue }
            object.forEachProperty { key, value in
                let kindKey = KindKey(className: object.className, property: key)
                guard let kind = pass.kinds[kindKey] ?? kinds[kindKey], kind.isReference else { return }
                for child in value.referencedUUIDs where !objects.contains(child) && pass.working[child] == nil && pass.temporaries[child] == nil {
                    guard let last = deleted[child] else { continue }
                    pass.working[child] = last
                    pass.revived.append(child)
                    stack.append(child)
                }
            }
        }
    }

    /// Merges a shared property (§8.21) into `value`: a counter's delta is added to the current
    /// total; a text's operations (or, in an `add`, its state) are applied to the stored text state;
    /// a plain string written over a shared text is typed in by the server's replica. Returns why
    /// the fragment fails, or nil.
    private func mergeShared(_ fragment: SyncFragment, key: String, value: inout JSON, target: inout StoredObject,
                             plan: inout ValidationPass.Plan) -> WireErrorBody? {
        if let delta = fragment.counterDeltas?[key], !plan.isNew {
            guard let sum = SharedMerge.addCounter(target[key], delta) else {
                return WireErrorBody(message: "Counter '\(key)' is not an integer or overflows")
            }
            value = sum
            plan.modifications[key] = sum
            plan.counters[key] = delta
            return nil
        }
        do throws(TextError) {
            if let member = fragment.textOperations?[key] {
                let merged = try SharedMerge.applyText(state: target.texts[key], plain: target[key], member: member)
                target.texts[key] = merged.state
                value = .string(merged.text)
                plan.texts[key] = member
            } else if let state = target.texts[key], case .string(let text) = value {
                let merged = try SharedMerge.replaceText(state: state, plain: nil, with: text)
                target.texts[key] = merged.state
                value = .string(merged.text)
                plan.texts[key] = merged.operations
            }
        } catch {
            return WireErrorBody(message: "Text '\(key)': \(error.description)")
        }
        return nil
    }

    /// The three-way merge of a collection value, without elements that name no object (of the
    /// scope or added by the same change set), or nil when it does not apply.
    private func merge(_ value: JSON, base: [UUID], current: StoredValue?, exists: (UUID) -> Bool) -> JSON? {
        let new = Self.referencedUUIDs(value)
        let currentUUIDs = current?.referencedUUIDs ?? []
        let merged = CollectionMerge.merge(base: base, new: new, current: currentUUIDs).filter(exists)
        return .array(merged.map { .string($0.wireString) })
    }

    private static func referencedUUIDs(_ value: JSON) -> [UUID] {
        switch value {
        case .string(let text): return UUID(wireString: text).map { [$0] } ?? []
        case .array(let elements):
            return elements.compactMap { element in element.stringValue.flatMap(UUID.init(wireString:)) }
        default: return []
        }
    }
}
