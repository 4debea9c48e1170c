/// Releases the callbacks of observers that were deallocated, at the end of each delivery turn.
///
/// Linux has no deallocation hook for an arbitrary object, so every registration is listed here
/// under its (weakly held) observer, and `NotificationQueue` calls `sweep()` at the end of each
/// delivery (`deliverPending`, which every run-loop turn with queued work and every `drain()` runs).
/// A sweep checks up to `budget` observers, round robin from where the last one stopped, and
/// releases every registration of the ones that are gone: their closures, and what those captured,
/// are freed then, not at the observed object's next change.
@MainActor
final class ObserverSweep {
    /// The most observers one sweep checks. With more observers than this, a dead one's callbacks
    /// are released within ⌈observers / budget⌉ delivery turns.
    static let budget = 1024

    /// One observer and what it registered.
    private struct Record {
        let id: ObjectIdentifier
        weak var observer: AnyObject?
        var registrations: [WeakRegistration]
        /// Cancelled registrations are compacted away when the list reaches this length.
        var compactAt = 8
    }

    private struct WeakRegistration {
        weak var registration: (any ObserverRegistration)?
    }

    private var records: [Record] = []
    private var positions: [ObjectIdentifier: Int] = [:]
    private var cursor = 0

    /// The number of observers with registrations listed (live or not yet swept).
    var observerCount: Int { records.count }

    /// Lists `registration` under `observer`. Amortised O(1).
    func register(_ registration: any ObserverRegistration, for observer: AnyObject) {
        let id = ObjectIdentifier(observer)
        if let at = positions[id] {
            if records[at].observer === observer {
                add(registration, toRecordAt: at)
                return
            }
            // The object that had this address before is gone: its callbacks go now.
            releaseRecord(at: at)
        }
        positions[id] = records.count
        records.append(Record(id: id, observer: observer, registrations: [WeakRegistration(registration: registration)]))
    }

    private func add(_ registration: any ObserverRegistration, toRecordAt at: Int) {
        records[at].registrations.append(WeakRegistration(registration: registration))
        if records[at].registrations.count >= records[at].compactAt {
            records[at].registrations.removeAll { $0.registration?.isReleased ?? true }
            records[at].compactAt = max(8, records[at].registrations.count * 2)
        }
    }

    /// Checks up to `budget` observers and releases the registrations of those that are gone.
    /// Returns how many observers were found gone. O(min(observers, budget)) plus the work of
    /// the released registrations.
    @discardableResult
    func sweep(budget: Int = ObserverSweep.budget) -> Int {
        var checks = min(budget, records.count)
        var released = 0
        while checks > 0, !records.isEmpty {
            checks -= 1
            if cursor >= records.count { cursor = 0 }
            if records[cursor].observer == nil {
                releaseRecord(at: cursor)
                released += 1
            } else {
                cursor += 1
            }
        }
        return released
    }

    /// Removes the record (swapping the last one into its place), then releases its registrations.
    /// The lists are consistent before any closure is dropped: a deinit that runs then may register.
    private func releaseRecord(at index: Int) {
        let record = records[index]
        let last = records.count - 1
        if index != last {
            records[index] = records[last]
            positions[records[index].id] = index
        }
        records.removeLast()
        positions[record.id] = nil
        for weak in record.registrations { weak.registration?.release() }
    }
}
