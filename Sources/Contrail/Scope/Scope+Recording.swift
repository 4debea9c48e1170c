import Foundation

/// Recording: what the model tree reports (attach, detach, property sets) becomes pending fragments.
extension Scope {
    func didAttach(_ object: ModelObject) {
        objects[object.uuid] = object
        if retired[object.uuid]?.object === object { retired[object.uuid] = nil }
        let id = ObjectIdentifier(object)
        if let left = leftThisFlush.removeValue(forKey: id) {
            // Back within the flush it left in: a move. Only the parents' changes go out.
            if let left, pending[id] == nil {
                pending[id] = left
                pendingOrder.append(id)
            }
            return
        }
        guard remoteDepth == 0, isRecordingAttach else { return }
        if pending[id] == nil { pendingOrder.append(id) }
        pending[id] = PendingFragment(object: object, kind: .add)
        scheduleFlush()
    }

    func didDetach(_ object: ModelObject) {
        if objects[object.uuid] === object { objects[object.uuid] = nil }
        retire(object)
        let id = ObjectIdentifier(object)
        let entry = pending.removeValue(forKey: id)
        if entry != nil { pendingOrder.removeAll { $0 == id } }
        // An object added in this flush and gone again cancels out; one the server knows may come back.
        if remoteDepth == 0, entry?.kind != .add { leftThisFlush[id] = entry }
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
        let options = object.info.properties[property].options
        guard !options.isLocal else { return }
        let interval = options.minSyncIntervalMilliseconds
        if interval > 0, pending[ObjectIdentifier(object)]?.kind != .add {
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
    /// first change. One hash lookup when the object is already pending; the entry is changed in place.
    private func touch(_ object: ModelObject, property: Int, old: @autoclosure () -> Any, base: @autoclosure () -> [UUID]?) {
        let id = ObjectIdentifier(object)
        if let at = pending.index(forKey: id) {
            guard pending.values[at].kind == .change, !pending.values[at].originals.contains(property) else { return }
            pending.values[at].originals[property] = old()
            if let base = base() { pending.values[at].bases[property] = base }
            return
        }
        // A flush is scheduled whenever `pending` stops being empty, so only the first entry asks;
        // it also makes room for as many entries as the largest flush so far had.
        if pending.isEmpty {
            scheduleFlush()
            pending.reserveCapacity(pendingCapacity)
            pendingOrder.reserveCapacity(pendingCapacity)
        }
        pendingOrder.append(id)
        pendingCapacity = max(pendingCapacity, pendingOrder.count)
        var entry = PendingFragment(object: object, kind: .change)
        entry.originals[property] = old()
        if let base = base() { entry.bases = [property: base] }
        pending[id] = entry
    }

    private func scheduleFlush() {
        ChangeDelivery.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }
}
