/// The last `limit` strings inserted, for membership tests: a set plus the insertion order, so the
/// oldest leaves when a new one comes. O(1) amortised per insert and lookup.
struct RecentIDs {
    private let limit: Int
    private var members: Set<String> = []
    private var order: [String] = []
    private var head = 0

    /// An empty window of `limit` ids.
    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether `id` is among the last `limit` inserted.
    func contains(_ id: String) -> Bool { members.contains(id) }

    /// Adds `id` (no-op if present), dropping the oldest when full.
    mutating func insert(_ id: String) {
        guard members.insert(id).inserted else { return }
        if order.count < limit {
            order.append(id)
        } else {
            members.remove(order[head])
            order[head] = id
            head = (head + 1) % limit
        }
    }
}
