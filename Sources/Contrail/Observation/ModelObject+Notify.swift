/// Dispatch of model events to the entries registered on an object.
extension ModelObject {
    /// Observation tracking and immediate change observers fire now; queued ones and tree observers
    /// (here and above) fire after the turn. O(observers on this object), plus the ancestors once per turn.
    func notifyChange(of property: Int) {
        guard let tracking = _tracking else { return }
        if tracking.observation != nil { notifyObservation(of: property) }
        if !tracking.observers.isEmpty {
            // A copy: an immediate callback may register or cancel observers on this object.
            for entry in tracking.observers {
                guard case .change(let immediate, let properties) = entry.event,
                      properties?.contains(property) ?? true else { continue }
                if immediate {
                    entry.fire()
                } else {
                    ChangeDelivery.main.enqueue(entry)
                }
            }
        }
        if ChangeDelivery.main.hasTreeObservers { notifyTreeChange() }
    }

    /// Queues the tree-change observers of this object and of every ancestor. Each object is visited
    /// at most once per delivery turn: a visited object's ancestors were queued with it, so later
    /// sets in the same turn stop at the first visited object. Allocates nothing. Skipped (by
    /// `notifyChange`) until the first tree observer is registered.
    func notifyTreeChange() {
        let turn = ChangeDelivery.main.turn
        var next: ModelObject? = self
        while let object = next {
            next = nil
            guard let tracking = object._tracking, tracking.treeTurn != turn else { return }
            tracking.treeTurn = turn
            for entry in tracking.observers {
                if case .treeChange = entry.event { ChangeDelivery.main.enqueue(entry) }
            }
            // The common case, one parent, loops; only a second parent recurses. The links are read in
            // place: copying one copies its weak reference.
            tracking.parents.withUnsafeBufferPointer { links in
                guard let base = links.baseAddress else { return }
                for index in 0..<links.count {
                    guard let parent = (base + index).pointee.parent else { continue }
                    if next == nil { next = parent } else { parent.notifyTreeChange() }
                }
            }
        }
    }

    func notifyCollection(added: Bool, property: Int, element: ModelObject, index: Int) {
        guard let observers = _tracking?.observers else { return }
        for entry in observers where entry.isLive {
            switch entry.event {
            case .collectionAdd(let p) where added && p == property, .collectionRemove(let p) where !added && p == property:
                if case .element(let body) = entry.callback { body(element, index) }
            default: break
            }
        }
    }

    func notifyParentChange(added: Bool, parent: ModelObject, key: String) {
        guard let observers = _tracking?.observers else { return }
        for entry in observers where entry.isLive {
            switch entry.event {
            case .addedToParent where added, .removedFromParent where !added:
                if case .parent(let body) = entry.callback { body(parent, key) }
            default: break
            }
        }
    }

    func notifyHost(attached: Bool, host: ModelObjectHost) {
        guard let observers = _tracking?.observers else { return }
        for entry in observers where entry.isLive {
            switch entry.event {
            case .attach where attached, .detach where !attached:
                if case .host(let body) = entry.callback { body(host) }
            default: break
            }
        }
    }

    func _removeObserverEntries(where shouldRemove: (ObserverEntry) -> Bool) {
        _tracking?.observers.removeAll { entry in
            let remove = shouldRemove(entry) || entry.observer == nil
            if remove { entry.isCancelled = true }
            return remove
        }
    }

    func addObserver(_ observer: AnyObject, _ event: ObserverEntry.Event, _ callback: ObserverEntry.Callback) -> ObservationToken {
        let entry = ObserverEntry(event: event, callback: callback, observer: observer, subject: self)
        let tracking = self.tracking
        tracking.observers.removeAll { $0.observer == nil }
        tracking.observers.append(entry)
        if case .treeChange = event { ChangeDelivery.main.invalidateTreeMarks() }
        return ObservationToken(entry: entry)
    }

    /// Removes every observation `observer` registered on this object.
    public func removeObservers(_ observer: AnyObject) {
        _removeObserverEntries { $0.observer === observer }
    }
}
