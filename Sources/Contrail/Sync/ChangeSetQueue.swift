import ContrailSupport
import Foundation

/// The local change sets of one scope that the server has not settled yet, oldest first
/// (Jetstream's ChangeSetQueue, Protocol §4.9, with the rebase done right).
///
/// The queue answers "which pending change set holds this (object, property)?" so that remote
/// values never overwrite a pending local edit (§8.3): the remote value becomes that change set's
/// original instead. When a change set is reverted, the next change set holding each of its keys
/// takes over its original, so reverting that one too goes back to what was there before both.
@MainActor
final class ChangeSetQueue {
    /// One pending change set.
    @MainActor
    final class Entry {
        let changeSet: ChangeSet
        /// The index of the `ScopeSync` that carries it on the current wire session, once sent.
        var index: Int?
        /// The id of the message it was first sent in (a ``ChangeSetBatch``'s, or its own id when
        /// it went alone): it goes again in that message, under that id, after a reconnect (and,
        /// through the fragment log, after a restart: it is the change set's ``ChangeSet/sentBatch``).
        var batch: UUID? {
            get { changeSet.sentBatch }
            set { changeSet.sentBatch = newValue }
        }
        /// Its place in the queue's order (later change sets have higher numbers); -1 once removed.
        fileprivate(set) var order = -1
        /// Where each key's change sits in `changeSet.changes`.
        let positions: [ChangeKey: Int]
        /// Objects this change set sends an `add` for: it holds every key of theirs, with no original
        /// (the server takes the add's values for an object it creates, and answers with its own
        /// values for one it already holds).
        let added: Set<ObjectIdentifier>
        /// Whether remote values for objects it adds were not applied (its add holds their keys):
        /// if it is reverted, those values are missing and the scope must be fetched again.
        var heldBackRemoteValues = false
        /// Shared text operations it sends before its own, by fragment index and property: an
        /// earlier refused change set's characters as deleted ones (`ChangeSetQueue+SharedText.swift`).
        var textPrefixes: [Int: [String: [TextOperation]]] = [:]

        init(_ changeSet: ChangeSet) {
            self.changeSet = changeSet
            var positions: [ChangeKey: Int] = [:]
            for (position, change) in changeSet.changes.enumerated() {
                positions[ChangeKey(change.object, change.property)] = position
            }
            self.positions = positions
            let scope = changeSet.scope
            added = Set(changeSet.stored.skeleton.filter { $0.kind == .add }.compactMap { fragment in
                scope?.object(for: fragment.uuid).map(ObjectIdentifier.init)
            })
        }

        /// Whether the key is held through an `add` only (no change with an original).
        func holdsThroughAdd(_ key: ChangeKey) -> Bool { positions[key] == nil && added.contains(key.object) }

        /// Records `value` as what the key held before this change set (as far as the server knows).
        func setOriginal(_ key: ChangeKey, _ value: Any) {
            setOriginal(key, kept: .plain(value))
        }

        /// Records `value`, as a change set keeps it, as what the key held before this change set.
        func setOriginal(_ key: ChangeKey, kept value: ChangeSet.Change.Value) {
            guard let position = positions[key] else { return }
            changeSet.changes[position].setOriginal(value)
        }

        /// The position in `fragments` (this change set's) of the `change` of `object` that
        /// `writes` (the position) accepts, or nil. O(fragments).
        func changeFragment(in fragments: [SyncFragment], of object: ModelObject, writing writes: (Int) -> Bool) -> Int? {
            // The root's fragment may still carry the UUID it had before it took over the server's.
            fragments.indices.first { fragments[$0].kind == .change && fragments[$0].uuid == object.uuid && writes($0) }
                ?? fragments.indices.first { fragments[$0].kind == .change && object === changeSet.scope?.root && writes($0) }
        }

        /// What this change set sends for property `index` of `object`, as the server applies it:
        /// the value of its fragment, with the `bases` a collection is merged by (§8.4; nil: a plain
        /// overwrite, as an `add` is for an object the server creates), and the objects its values
        /// name. Nil when it holds no such key.
        func sentValue(of object: ModelObject, property index: Int, name: String)
            -> (value: JSON, base: [UUID]?, models: [ModelObject], delta: Int64?)? {
            let stored = changeSet.stored
            let fragments = stored.skeleton
            guard let position = positions[ChangeKey(object, index)] else {
                guard added.contains(ObjectIdentifier(object)),
                      let fragment = fragments.first(where: { $0.kind == .add && $0.uuid == object.uuid }),
                      let value = fragment.properties[name] else { return nil }
                return (value, nil, [], nil)
            }
            let change = changeSet.changes[position]
            // A collection kept as versions (``CompactFragments``) is rebuilt: O(n) for holders
            // visited oldest first, as a rebase does.
            guard let at = changeFragment(in: fragments, of: object, writing: {
                fragments[$0].properties[name] != nil || stored.collection(at: $0, name) != nil
            }) else { return nil }
            let fragment = fragments[at]
            let models = change.models
            if let collection = stored.collection(at: at, name) {
                let base = collection.base.elements  // first: the new value is then one edit away
                return (CompactFragments.wire(collection.new.elements), base, models, fragment.counterDeltas?[name])
            }
            guard let value = fragment.properties[name] else { return nil }
            return (value, fragment.bases?[name], models, fragment.counterDeltas?[name])
        }
    }

    private(set) var entries: [Entry] = []
    /// The queued change sets holding each key through a change, oldest first.
    private var byKey: [ChangeKey: [Entry]] = [:]
    /// The queued change sets adding each object (holding all its keys), oldest first.
    private var byAdded: [ObjectIdentifier: [Entry]] = [:]
    private var nextOrder = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// Adds a change set at the end. O(its changes).
    @discardableResult
    func append(_ changeSet: ChangeSet) -> Entry {
        let entry = Entry(changeSet)
        entry.order = nextOrder
        nextOrder += 1
        entries.append(entry)
        for key in entry.positions.keys { byKey[key, default: []].append(entry) }
        for object in entry.added { byAdded[object, default: []].append(entry) }
        return entry
    }

    /// How many queued change sets add `object`. O(1).
    func addCount(of object: ModelObject) -> Int { byAdded[ObjectIdentifier(object)]?.count ?? 0 }

    /// Whether `entry` is in the queue.
    private func isQueued(_ entry: Entry) -> Bool { entry.order >= 0 }

    /// The queued change sets that hold `key`, oldest first, from the first one after `order`.
    /// O(holders of the key).
    private func holders(of key: ChangeKey, after order: Int) -> [Entry] {
        let changing = byKey[key] ?? []
        let adding = byAdded[key.object] ?? []
        guard !adding.isEmpty else { return changing.filter { $0.order > order } }
        guard !changing.isEmpty else { return adding.filter { $0.order > order } }
        return (changing + adding).filter { $0.order > order }.sorted { $0.order < $1.order }
    }

    /// The first queued change set after `order` that holds `key`. O(1) for the oldest holders.
    private func firstHolder(of key: ChangeKey, after order: Int) -> Entry? {
        let changing = byKey[key]?.first { $0.order > order }
        let adding = byAdded[key.object]?.first { $0.order > order }
        guard let changing, let adding else { return changing ?? adding }
        return changing.order < adding.order ? changing : adding
    }

    /// The oldest pending change set that holds `key`. O(1).
    func firstHolder(of key: ChangeKey) -> Entry? {
        firstHolder(of: key, after: -1)
    }

    /// `entry` and every later change set that holds `key`, oldest first. O(holders of the key).
    func holders(of key: ChangeKey, from entry: Entry) -> [Entry] {
        guard isQueued(entry) else { return [] }
        return holders(of: key, after: entry.order - 1)
    }

    /// The first change set after `entry` that holds `key`.
    func holder(of key: ChangeKey, after entry: Entry) -> Entry? {
        firstHolder(of: key, after: isQueued(entry) ? entry.order : -1)
    }

    /// Every key of `entry`'s changes that a change set after it holds: through a change of its
    /// own, or through an `add` of the key's object (which sends the current value).
    func keys(heldAfter entry: Entry) -> Set<ChangeKey> {
        guard isQueued(entry) else { return [] }
        return Set(entry.positions.keys.filter { firstHolder(of: $0, after: entry.order) != nil })
    }

    /// Reverts `entry` locally: keys of the objects in `objects` (all when nil) go back to their
    /// originals, except keys later change sets hold, which instead take `entry`'s original as
    /// their own (the rebase), or keep their value when a later `add` sends it. A shared text is
    /// rolled back whoever holds it after (`SharedTextEdit.rollBack`).
    func revert(_ entry: Entry, objects: Set<UUID>? = nil) {
        // A shared text's edit is not a value to hand on: it is always rolled back itself, and the
        // later change sets' edits stay on top of what the server holds.
        let later = keys(heldAfter: entry).subtracting(entry.changeSet.changes.filter(\.isSharedText).map { ChangeKey($0.object, $0.property) })
        for change in entry.changeSet.changes where change.touches(objects) {
            let key = ChangeKey(change.object, change.property)
            if later.contains(key), let next = holder(of: key, after: entry) {
                next.setOriginal(key, kept: change.original)
            }
        }
        entry.changeSet.revert(excluding: later, onlyObjects: objects)
    }

    /// Hands the keys of `entry`, which the server took, to the change sets after it: the next one
    /// holding each key takes `entry`'s value as its original, since that is what the server holds
    /// after `entry` (a reply's modifications, applied after this, correct it where the server's
    /// merge differs). Without this a later change set keeps the original it was made on, which a
    /// remote value that reached only the first holder may have made stale, and reverting it would
    /// bring back what the server removed. Objects in `rejected` are skipped (their revert hands
    /// over `entry`'s own originals). A shared text settles through its operations, not here.
    /// O(changes of `entry` × holders of each key).
    func handOver(_ entry: Entry, except rejected: Set<UUID>) {
        for change in entry.changeSet.changes where !rejected.contains(change.object.uuid) && !change.isSharedText {
            let key = ChangeKey(change.object, change.property)
            holder(of: key, after: entry)?.setOriginal(key, kept: change.result)
        }
    }

    /// Removes `entry` from the queue. O(1) for the oldest (replies come in order), plus its keys.
    func remove(_ entry: Entry) {
        guard isQueued(entry), let position = entries.firstIndex(where: { $0 === entry }) else { return }
        entries.remove(at: position)
        for key in entry.positions.keys { Self.drop(entry, from: &byKey, key) }
        for object in entry.added { Self.drop(entry, from: &byAdded, object) }
        entry.order = -1
    }

    private static func drop<Key: Hashable>(_ entry: Entry, from index: inout [Key: [Entry]], _ key: Key) {
        guard var list = index.removeValue(forKey: key) else { return }
        if list.first === entry { list.removeFirst() } else { list.removeAll { $0 === entry } }
        if !list.isEmpty { index[key] = list }
    }

    /// Forgets every send (a new wire session numbers from 1 again). What each was sent in stays
    /// (``Entry/batch``).
    func markAllUnsent() {
        for entry in entries { entry.index = nil }
    }

    /// The change sets not yet sent on this wire session, oldest first: a suffix of the queue (they
    /// are sent oldest first, a new one goes last, and a new wire session unsends them all), found
    /// by binary search. O(log n), not O(n) per reply.
    var unsent: ArraySlice<Entry> {
        let low = entries.partitioningIndex { $0.index == nil }
        assert(entries[..<low].allSatisfy { $0.index != nil }, "a sent change set after an unsent one")
        return entries[low...]
    }
}
