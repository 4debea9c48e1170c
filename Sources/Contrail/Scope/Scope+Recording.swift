import Foundation

/// Recording: what the model tree reports (attach, detach, property sets) becomes pending fragments.
extension Scope {
    func didAttach(_ object: ModelObject) {
        objects[object.uuid] = object
        if retired[object.uuid]?.object === object { retired[object.uuid] = nil }
        if let left = leftThisFlush.removeValue(forKey: ObjectIdentifier(object)) {
            // Back within the flush it left in: a move. Only the parents' changes go out.
            if let left, pending[object] == nil { pending.set(left, for: object) }
            return
        }
        guard remoteDepth == 0, isRecordingAttach else { return }
        pending.set(PendingFragment(kind: .add), for: object)
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

    func record<Value: PropertyValue>(_ object: ModelObject, property: Int, old: Value) {
        guard remoteDepth == 0 else { return }
        let options = object.info.options[property]
        guard !options.isLocal else { return }
        let interval = options.minSyncIntervalMilliseconds
        if interval > 0, pending[object]?.kind != .add {
            let key = ChangeKey(object, property)
            if throttled.contains(key) { return }
            let now = ContinuousClock.now
            if let last = lastRecorded[key], now - last < .milliseconds(interval) {
                throttled.insert(key)
                let due = last + .milliseconds(interval)
                let boxedOld: Any = old
                DispatchQueue.main.asyncAfter(deadline: .now() + (due - now).seconds) { [weak self, weak object] in
                    MainActor.assumeIsolated {
                        guard let self, let object else { return }
                        self.throttled.remove(key)
                        guard object.scope === self else { return }
                        self.lastRecorded[key] = .now
                        self.touch(object, property: property, old: boxedOld, base: nil)
                    }
                }
                return
            }
            lastRecorded[key] = now
        }
        touch(object, property: property, old: old, base: Value.valueKind == .collection ? old.models.map(\.uuid) : nil)
    }

    /// Notes that `property` of `object` changed in this flush, keeping the value it had before the
    /// first change. The entry lives on the object (`PendingFragments`): a later set of the same
    /// property in the flush is a load and two compares; a first set stores the original in place.
    private func touch(_ object: ModelObject, property: Int, old: @autoclosure () -> Any, base: @autoclosure () -> [UUID]?) {
        if let tracking = pending.tracking(withEntry: object) {
            guard tracking.pending?.kind == .change, tracking.pending?.originals.contains(property) == false else { return }
            tracking.pending?.originals[property] = old()
            if let base = base() { tracking.pending?.bases[property] = base }
            return
        }
        // A flush is scheduled whenever `pending` stops being empty, so only the first entry asks.
        if pending.isEmpty { scheduleFlush() }
        var entry = PendingFragment(changing: property, from: old())
        if let base = base() { entry.bases = [property: base] }
        pending.set(entry, for: object)
    }

    private func scheduleFlush() {
        ChangeDelivery.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }
}
