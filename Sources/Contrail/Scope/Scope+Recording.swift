import Foundation

/// Recording: what the model tree reports (attach, detach, property sets) becomes pending fragments.
extension Scope {
    func didAttach(_ object: ModelObject) {
        let uuid = object.uuid
        objects[uuid] = object
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
        tracking.pending = PendingFragment(kind: .add)
        scheduleFlush()
    }

    func didDetach(_ object: ModelObject) {
        if objects[object.uuid] === object { objects[object.uuid] = nil }
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

    /// Records that `property` of `object` (whose tracking record is `tracking`) changed from `old`.
    func record<Value: PropertyValue>(_ object: ModelObject, tracking: ModelTracking, property: Int, old: Value) {
        guard remoteDepth == 0 else { return }
        let options = tracking.info.options[property]
        guard !options.isLocal else { return }
        if options.minSyncIntervalMilliseconds > 0, pending[object]?.kind != .add,
           !passesThrottle(object, property: property, interval: options.minSyncIntervalMilliseconds, old: old) {
            return
        }
        touch(object, tracking: tracking, property: property, old: old)
    }

    /// Notes that `property` of `object` changed in this flush, keeping the value it had before the
    /// first change. The entry lives on the object (`PendingFragments`): a later set of the same
    /// property in the flush is a load and two compares; a first set makes the entry in place.
    private func touch<Value: PropertyValue>(_ object: ModelObject, tracking: ModelTracking, property: Int, old: Value) {
        let base = { Value.valueKind == .collection ? old.models.map(\.uuid) : nil }
        if tracking.pendingGeneration == pending.generation {
            guard tracking.pending?.kind == .change, tracking.pending?.originals.contains(property) == false else { return }
            tracking.pending?.originals[property] = old
            if let base = base() { tracking.pending?.bases[property] = base }
            return
        }
        // A flush is scheduled whenever `pending` stops being empty, so only the first entry asks.
        if pending.isEmpty { scheduleFlush() }
        pending.list(object, tracking: tracking)
        tracking.pending = PendingFragment(changing: property, from: old, base: base())
    }

    /// Whether a change of a property with a minimum sync interval is recorded now. One that comes
    /// too soon after the last is recorded when the interval is over (from the value it had before
    /// this change); until then, further changes of it are not recorded.
    private func passesThrottle<Value: PropertyValue>(_ object: ModelObject, property: Int, interval: UInt32, old: Value) -> Bool {
        let key = ChangeKey(object, property)
        if throttled.contains(key) { return false }
        let now = ContinuousClock.now
        guard let last = lastRecorded[key], now - last < .milliseconds(interval) else {
            lastRecorded[key] = now
            return true
        }
        throttled.insert(key)
        let due = last + .milliseconds(interval)
        DispatchQueue.main.asyncAfter(deadline: .now() + (due - now).seconds) { [weak self, weak object] in
            MainActor.assumeIsolated {
                guard let self, let object else { return }
                self.throttled.remove(key)
                guard object.scope === self else { return }
                self.lastRecorded[key] = .now
                self.touch(object, tracking: object.tracking, property: property, old: old)
            }
        }
        return false
    }

    private func scheduleFlush() {
        ChangeDelivery.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }
}
