import ContrailWire
import Foundation

/// The collection values a scope held or a sender made most recently, by digest: the bases a
/// collection edit may name besides the current value (§8.24). A sender that queued several change
/// sets edits each on top of its previous one, so the next one's base is the sender's last new
/// value, which differs from the scope's value once another client edited the collection meanwhile.
/// Bounded by entries and by elements; the oldest go first. Only a ``LocalScope`` keeps one: in a
/// cluster every server must resolve an edit alike, so there only the current value counts.
struct RecentCollections: Sendable {
    private var values: [UInt64: [UUID]] = [:]
    private var order: [UInt64] = []
    private var head = 0
    private var elementCount = 0
    private let maxEntries: Int
    private let maxElements: Int

    init(maxEntries: Int = 256, maxElements: Int = 1_000_000) {
        self.maxEntries = maxEntries
        self.maxElements = maxElements
    }

    /// The value `edit` names as its base, if it is kept. O(n).
    func base(of edit: CollectionEdit) -> [UUID]? {
        guard let value = values[edit.baseDigest], edit.isBase(value) else { return nil }
        return value
    }

    /// Keeps `value`. O(n) (its digest).
    mutating func insert(_ value: [UUID]) {
        guard value.count <= maxElements else { return }
        let digest = CollectionEdit.digest(of: value)
        guard values[digest] == nil else { return }
        values[digest] = value
        order.append(digest)
        elementCount += value.count
        while order.count - head > maxEntries || elementCount > maxElements {
            let oldest = order[head]
            head += 1
            elementCount -= values.removeValue(forKey: oldest)?.count ?? 0
        }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
