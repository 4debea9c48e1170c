import Foundation

/// The ids of the change sets a scope applied most recently, oldest first, at most `capacity`:
/// a change set sent again (a new session, a server restart) is answered, not applied twice.
struct RecentChangeSets: Sendable {
    let capacity: Int
    private var order: [UUID] = []
    private var start = 0
    private var members: Set<UUID> = []

    init(capacity: Int = 10_000) { self.capacity = capacity }

    func contains(_ id: UUID) -> Bool { members.contains(id) }

    /// Remembers `id`, forgetting the oldest past `capacity`. Amortised O(1).
    mutating func insert(_ id: UUID) {
        guard members.insert(id).inserted else { return }
        order.append(id)
        if members.count > capacity {
            members.remove(order[start])
            start += 1
            if start > capacity {
                order.removeFirst(start)
                start = 0
            }
        }
    }

    /// Every remembered id, oldest first.
    var ids: ArraySlice<UUID> { order[start...] }
}
