import Foundation

/// Consecutive pending change sets sent as one `ScopeSync` (coalescing, issue 30): a client that
/// comes back with thousands of change sets sends a few messages, each applied by the server once,
/// instead of one message (and one pass over every collection it touches) per change set.
///
/// Only the wire message is merged. Locally every change set stays as it was made: its own entry in
/// the queue, its id, its undo step, its state, its record in the fragment log; each is settled from
/// the batch's reply as if it had been sent alone (``replies(to:)``).
///
/// What is merged: change sets that are not atomic, call no procedure, carry no shared-text
/// operations or counter deltas, add no object that has left the scope or is added again since,
/// and are no longer on the scope's undo stack (``canJoin(_:in:)``: an undo replays the values a
/// change set replaced, which only a change set settled on its own has rebased over remote
/// edits, Protocol §8.3; a scope restored from a fragment log has no undo steps), consecutive in the queue and never sent before,
/// into one non-atomic `ScopeSync` with a new id, up to ``maxMembers`` of them and within the
/// server's limits. Their fragments are merged per object: a later
/// `change` of an object overwrites the values of the object's last `change` in the batch (after
/// an `add` of it, it goes as a `change` of its own, applied after the add), and a collection
/// keeps the base of its first change in the batch, so the server
/// merges the batch's last value against the value before the batch (one three-way merge, §8.4, or
/// one edit, §8.24, instead of one per change set). Anything else ends the batch before it: an
/// atomic change set, a procedure call, shared values, an `add` of an object the batch already
/// names (one that left the tree and came back). The server collects garbage once per message, so
/// an object a batch adds and takes out again is never stored.
///
/// Sent once, a batch is frozen: its members keep its id (``ChangeSetQueue/Entry/batch``), and after
/// a reconnect they go again as the same batch with the same id, so a server that applied it
/// answers it as a repeat (Protocol §8.11) instead of applying it twice. For the same reason a
/// change set sent alone goes alone again after a reconnect (``ChangeSetQueue/markAllUnsent()``).
@MainActor
struct ChangeSetBatch {
    /// The merged message's members, oldest first.
    private(set) var entries: [ChangeSetQueue.Entry] = []
    /// The merged fragments, in order of each object's first fragment in the batch, without the
    /// collections in `collections` (``whole`` puts them back).
    private(set) var fragments: [SyncFragment] = []
    /// For each merged fragment, its collections kept as versions (``CompactFragments``): the base
    /// before the batch and the last member's value. A batch of a thousand appends to a long list
    /// holds the list twice, not a thousand times, until it goes.
    private var collections: [Int: [String: (base: CollectionVersion, new: CollectionVersion)]] = [:]
    /// For each member, for each of its fragments, the merged fragment it went into.
    private var targets: [[Int]] = []
    /// The merged fragment of each object.
    private var slot: [UUID: Int] = [:]

    /// Whether the change set of `entry` may be merged with others (see the type's documentation).
    /// O(fragments + the scope's undo steps).
    static func canJoin(_ entry: ChangeSetQueue.Entry, in queue: ChangeSetQueue) -> Bool {
        let changeSet = entry.changeSet
        guard !changeSet.isAtomic, changeSet.procedure == nil, let scope = changeSet.scope,
              !scope.undoStack.contains(where: { $0 === changeSet }) else { return false }
        return changeSet.stored.skeleton.allSatisfy { fragment in
            guard fragment.textOperations == nil, fragment.counterDeltas == nil else { return false }
            guard fragment.kind == .add else { return true }
            // An object added and taken out again later (it left the scope, or another pending
            // change set adds it again) could reach the server unreachable at the end of the batch
            // and be refused there; it goes alone, as it was made.
            guard let object = scope.object(for: fragment.uuid) else { return false }
            return queue.addCount(of: object) == 1
        }
    }

    /// The most change sets one batch merges.
    static let maxMembers = 1_000

    /// The number of members.
    var count: Int { entries.count }

    /// Adds `entry`, whose outgoing fragments are `outgoing` (without the collections its change
    /// set keeps as versions, ``CompactFragments/skeleton``: those are `kept`), when they merge with
    /// the batch (see the type's documentation); leaves the batch as it was and returns false
    /// otherwise. O(fragments of `entry` + the properties they write).
    mutating func add(_ entry: ChangeSetQueue.Entry, outgoing: [SyncFragment], kept: [CompactFragments.Collection]) -> Bool {
        // An object that came back after leaving the tree is added again: it ends the batch.
        guard outgoing.allSatisfy({ $0.kind == .change || slot[$0.uuid] == nil }) else { return false }
        var placed: [Int] = []
        placed.reserveCapacity(outgoing.count)
        for (index, fragment) in outgoing.enumerated() {
            let versions = kept.filter { $0.fragment == index }
            if let position = slot[fragment.uuid], fragments[position].kind == .change {
                merge(fragment, versions, into: position)
                placed.append(position)
            } else {
                // A change of an object the batch adds goes after the add, as the next message would
                // (an add the server finds the object for keeps the server's values, §4.8).
                slot[fragment.uuid] = fragments.count
                placed.append(fragments.count)
                for collection in versions { collections[fragments.count, default: [:]][collection.key] = (collection.base, collection.new) }
                fragments.append(fragment)
            }
        }
        entries.append(entry)
        targets.append(placed)
        return true
    }

    /// Writes the values of `later` (and its collections kept as `versions`) over the merged
    /// fragment at `position` (two `change` fragments of one object). A collection keeps the base
    /// it had before (the value before the batch); one not written before takes `later`'s base.
    /// O(properties of `later`), plus O(n) for a collection written in one form, then the other.
    private mutating func merge(_ later: SyncFragment, _ versions: [CompactFragments.Collection], into position: Int) {
        for (key, value) in later.properties {
            if let earlier = collections[position]?.removeValue(forKey: key) {
                // Kept as versions before, whole now: the base before the batch goes back whole.
                fragments[position].bases = (fragments[position].bases ?? [:]).merging([key: earlier.base.elements]) { _, new in new }
            }
            let wroteBefore = fragments[position].properties[key] != nil || fragments[position].bases?[key] != nil
            fragments[position].properties[key] = value
            guard !wroteBefore, let base = later.bases?[key] else { continue }
            fragments[position].bases = (fragments[position].bases ?? [:]).merging([key: base]) { _, new in new }
        }
        for collection in versions {
            if let earlier = collections[position]?[collection.key] {
                collections[position]?[collection.key] = (earlier.base, collection.new)
            } else if fragments[position].properties[collection.key] != nil {
                // Whole before, kept as versions now: the base before the batch (or none) stays.
                guard let base = fragments[position].bases?[collection.key] else {
                    fragments[position].properties[collection.key] = CompactFragments.wire(collection.new.elements)
                    continue
                }
                fragments[position].properties[collection.key] = nil
                fragments[position].bases?[collection.key] = nil
                collections[position, default: [:]][collection.key] = (.whole(base), collection.new)
            } else {
                collections[position, default: [:]][collection.key] = (collection.base, collection.new)
            }
        }
    }

    /// The merged fragment at `position` with its collections put back. O(its size + n per collection).
    func whole(at position: Int) -> SyncFragment {
        var fragment = fragments[position]
        for (key, versions) in collections[position] ?? [:] {
            fragment.bases = (fragment.bases ?? [:]).merging([key: versions.base.elements]) { _, new in new }
            fragment.properties[key] = CompactFragments.wire(versions.new.elements)
        }
        return fragment
    }

    /// The merged fragments as the message carries them (collections put back). O(their size).
    var whole: [SyncFragment] { fragments.indices.map(whole(at:)) }

    /// What each member's reply would have been had it been sent alone, from `reply` (the batch's):
    /// for each member, its own fragments (or, for the last member writing an object, the merged
    /// fragment, whose base is the value before the batch) and a `ScopeSyncReply` with one
    /// fragment reply each. A refused merged fragment refuses every member's fragment of that
    /// object; the server's values (`modifications`) go to the last member writing the object only
    /// (they are the values after the batch). Any other reply goes to every member as it is (each
    /// is then settled as an invalid reply). O(fragments).
    func replies(to reply: Message, outgoing: [[SyncFragment]]) -> [(fragments: [SyncFragment], reply: Message)] {
        guard case .scopeSyncReply(let batchReply) = reply, batchReply.fragmentReplies.count == fragments.count else {
            return outgoing.map { ($0, reply) }
        }
        var last: [Int: Int] = [:]
        for (member, placed) in targets.enumerated() {
            for position in placed { last[position] = member }
        }
        return targets.enumerated().map { member, placed in
            var memberFragments: [SyncFragment] = []
            var memberReplies: [FragmentReply] = []
            for (fragment, position) in zip(outgoing[member], placed) {
                var fragmentReply = batchReply.fragmentReplies[position]
                if last[position] == member {
                    memberFragments.append(whole(at: position))
                } else {
                    memberFragments.append(fragment)
                    fragmentReply.modifications = nil
                }
                memberReplies.append(fragmentReply)
            }
            let memberReply = ScopeSyncReply(index: batchReply.index, replyTo: batchReply.replyTo, fragmentReplies: memberReplies,
                                             repeated: batchReply.repeated)
            return (memberFragments, .scopeSyncReply(memberReply))
        }
    }
}
