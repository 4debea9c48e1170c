import Foundation

/// The last state of the objects a scope deleted most recently (collected once nothing referenced
/// them), oldest first, at most `capacity` (10,000 by default): an `add` of such an object, or a
/// move of it into another collection by a client that knew it, brings it back as the server last
/// had it instead of as the sender last saw it, so what others added to it meanwhile survives.
/// Kept in snapshots, so a restart keeps it too.
struct DeletedObjects: Sendable {
    let capacity: Int
    private var order: [UUID] = []
    private var start = 0
    private var members: [UUID: StoredObject] = [:]

    init(capacity: Int = 10_000) { self.capacity = capacity }

    /// The number of objects kept.
    var count: Int { members.count }

    /// The last state of the deleted object `uuid`, if it is kept.
    subscript(uuid: UUID) -> StoredObject? { members[uuid] }

    /// Keeps `object` as the last state of `uuid`, forgetting the oldest past `capacity`. Amortised O(1).
    mutating func insert(_ uuid: UUID, _ object: StoredObject) {
        if members.updateValue(object, forKey: uuid) == nil { order.append(uuid) }
        while members.count > capacity, start < order.count {
            members.removeValue(forKey: order[start])
            start += 1
        }
        compactOrder()
    }

    /// Forgets `uuid` (the object exists again). O(1), its slot in the order is skipped later.
    mutating func remove(_ uuid: UUID) {
        members.removeValue(forKey: uuid)
    }

    /// Every kept object, oldest first.
    var all: [(UUID, StoredObject)] {
        var seen: Set<UUID> = []
        return order[start...].compactMap { uuid in
            guard let object = members[uuid], seen.insert(uuid).inserted else { return nil }
            return (uuid, object)
        }
    }

    /// Drops the order's forgotten entries once they outnumber the kept ones.
    private mutating func compactOrder() {
        guard order.count - start > 2 * max(members.count, 16) || start > capacity else { return }
        var seen: Set<UUID> = []
        order = order[start...].filter { members[$0] != nil && seen.insert($0).inserted }
        start = 0
    }
}
