import ContrailSupport
import Foundation

/// Recording: what the model tree reports (attach, detach, property sets) becomes pending fragments.
extension Scope {
    /// `object` joined the scope: it is kept by uuid and, for a local attach, recorded as an `add`.
    func memberAttached(_ object: ModelObject) {
        let uuid = object.uuid
        objects[uuid] = object
        queryHub?.changed(object)
        // The two lookups below are skipped while their tables are empty (a restore, a fetch).
        if !retired.isEmpty, retired[uuid]?.object === object { retired[uuid] = nil }
        if !leftThisFlush.isEmpty, let left = leftThisFlush.removeValue(forKey: ObjectIdentifier(object)) {
            // Back within the flush it left in: a move. Only the parents' changes go out.
            if let left, pending[object] == nil {
                let tracking = object.tracking
                pending.list(object, tracking: tracking)
                tracking.pending = left
            }
            return
        }
        guard remoteDepth == 0, isRecordingAttach else { return }
        let tracking = object.tracking
        pending.list(object, tracking: tracking)
        tracking.pending = PendingChange(kind: .add)
        scheduleFlush()
    }

    /// `object` left the scope.
    func memberDetached(_ object: ModelObject) {
        if objects[object.uuid] === object { objects[object.uuid] = nil }
        queryHub?.changed(object)
        retire(object)
        let entry = pending.removeValue(for: object)
        // An object added in this flush and gone again cancels out; one the server knows may come back.
        if remoteDepth == 0, entry?.kind != .add { leftThisFlush[ObjectIdentifier(object)] = entry }
    }

    private func retire(_ object: ModelObject) {
        retired[object.uuid] = WeakObject(object)
        if retired.count > retiredPruneThreshold {
            retired = retired.filter { $0.value.object != nil }
            retiredPruneThreshold = max(64, retired.count * 2)
        }
    }

    /// Notes that `property` of `object` changed in this flush, keeping the value it had before the
    /// first change (for a collection, the merge's base: its elements are read from that value when
    /// the flush makes the change set, not here). The entry lives on the object
    /// (`PendingFragments`): a later set of the same property in the flush is a load and two
    /// compares; a first set makes the entry in place. O(1).
    @inline(__always)
    func touch(_ object: ModelObject, tracking: ModelTracking, property: Int, old: consuming Any) {
        if tracking.pendingGeneration == pending.generation {
            guard tracking.pending?.kind == .change, tracking.pending?.originals.contains(property) == false else { return }
            tracking.pending?.originals[property] = old
            return
        }
        // A flush is scheduled whenever `pending` stops being empty, so only the first entry asks.
        if pending.isEmpty { scheduleFlush() }
        pending.list(object, tracking: tracking)
        tracking.pending = PendingChange(changing: property, from: old)
    }

    /// Whether a change of a property with a minimum sync interval is recorded now. One that comes
    /// too soon after the last is recorded when the interval is over (from the value it had before
    /// this change); until then, further changes of it are not recorded.
    func passesThrottle(_ object: ModelObject, property: Int, interval: UInt32, old: Any) -> Bool {
        let key = ChangeKey(object, property)
        if throttled.contains(key) { return false }
        let now = clock.elapsed
        guard let last = lastRecorded[key], now - last < .milliseconds(interval) else {
            lastRecorded[key] = now
            return true
        }
        throttled.insert(key)
        let due = ElapsedClock.Instant(offset: last + .milliseconds(interval))
        let clock = self.clock
        Task { @MainActor [weak self, weak object] in
            try? await clock.sleep(until: due)
            guard let self, let object else { return }
            self.throttled.remove(key)
            guard object.scope === self else { return }
            self.lastRecorded[key] = clock.elapsed
            self.touch(object, tracking: object.tracking, property: property, old: old)
        }
        return false
    }

    private func scheduleFlush() {
        ChangeDelivery.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }
}
