/// Dispatch of model events to the entries registered on an object.
extension ModelObject {
    /// Immediate change observers fire now; queued ones and tree observers (here and above) fire
    /// after the turn.
    func notifyChange(of property: Int) {
        if let observers = _tracking?.observers, !observers.isEmpty {
            for entry in observers {
                if entry.matchesChange(of: property, immediate: true) {
                    entry.fire()
                } else if entry.matchesChange(of: property, immediate: false) {
                    NotificationQueue.main.enqueue(entry)
                }
            }
        }
        notifyTreeChange()
    }

    /// Queues the tree-change observers of this object and of every ancestor (each once).
    func notifyTreeChange() {
        guard let tracking = _tracking, !tracking.observers.isEmpty || !tracking.parents.isEmpty else { return }
        var visited = Set<ObjectIdentifier>()
        var stack: [ModelObject] = [self]
        while let object = stack.popLast() {
            guard let tracking = object._tracking, visited.insert(ObjectIdentifier(object)).inserted else { continue }
            for entry in tracking.observers {
                if case .treeChange = entry.event, entry.isLive { NotificationQueue.main.enqueue(entry) }
            }
            for link in tracking.parents {
                if let parent = link.parent { stack.append(parent) }
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

    func notifyScope(attached: Bool, scope: Scope) {
        guard let observers = _tracking?.observers else { return }
        for entry in observers where entry.isLive {
            switch entry.event {
            case .attach where attached, .detach where !attached:
                if case .scope(let body) = entry.callback { body(scope) }
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
        return ObservationToken(entry: entry)
    }

    /// Removes every observation `observer` registered on this object.
    public func removeObservers(_ observer: AnyObject) {
        _removeObserverEntries { $0.observer === observer }
    }
}
