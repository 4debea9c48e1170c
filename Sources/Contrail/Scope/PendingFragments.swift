/// The fragments a scope is building in the current flush, in order of first entry.
///
/// Each entry lives on its object's tracking record, stamped with the flush's generation, so finding
/// an object's entry is a load and a compare: no hashing, no allocation. A stamp from another
/// generation (an earlier flush, another scope) means "no entry". Invariant: an object carries this
/// collection's generation exactly while it is listed in `order`.
@MainActor
struct PendingFragments {
    /// The objects with an entry, in order of first entry. Holds them alive until the flush.
    private(set) var order: [ModelObject] = []
    /// Unique per flush of every scope; entries stamped with another generation are stale.
    private(set) var generation = PendingFragments.nextGeneration()
    /// The most entries one flush held: the first entry of a flush reserves that much.
    private var capacity = 0

    private static var lastGeneration: UInt = 0

    private static func nextGeneration() -> UInt {
        lastGeneration += 1
        return lastGeneration
    }

    /// Whether no object has an entry.
    var isEmpty: Bool { order.isEmpty }

    /// The entry of `object`, if it has one in this flush.
    subscript(object: ModelObject) -> PendingChange? {
        guard let tracking = object._tracking, tracking.pendingGeneration == generation else { return nil }
        return tracking.pending
    }

    /// The tracking record of `object` when it has an entry in this flush (to change it in place).
    func tracking(withEntry object: ModelObject) -> ModelTracking? {
        guard let tracking = object._tracking, tracking.pendingGeneration == generation else { return nil }
        return tracking
    }

    /// Lists `object` (whose tracking record is `tracking`) last, with an entry its caller then
    /// stores in `tracking.pending` in place. Requires that it has no entry in this flush.
    mutating func list(_ object: ModelObject, tracking: ModelTracking) {
        assert(tracking.pendingGeneration != generation && object._tracking === tracking)
        if order.isEmpty { order.reserveCapacity(capacity) }
        order.append(object)
        capacity = max(capacity, order.count)
        tracking.pendingGeneration = generation
    }

    /// Removes the entry of `object` and returns it. O(entries) when there is one.
    @discardableResult
    mutating func removeValue(for object: ModelObject) -> PendingChange? {
        guard let tracking = tracking(withEntry: object) else { return nil }
        let entry = tracking.pending
        tracking.pending = nil
        tracking.pendingGeneration = 0
        order.removeAll { $0 === object }
        return entry
    }

    /// Every entry in order of first entry, leaving none (a new generation starts). O(entries).
    mutating func takeAll() -> [(object: ModelObject, entry: PendingChange)] {
        let objects = order
        let taken = generation
        order = []
        generation = Self.nextGeneration()
        return objects.compactMap { object in
            guard let tracking = object._tracking, tracking.pendingGeneration == taken,
                  let entry = tracking.pending else { return nil }
            tracking.pending = nil
            return (object, entry)
        }
    }
}
