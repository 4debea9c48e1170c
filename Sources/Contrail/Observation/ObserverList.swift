/// Callbacks registered by weakly held observers, each removable through the token its
/// registration returns. Callbacks of observers that are gone are dropped.
@MainActor
final class ObserverList<Value> {
    private var entries: [(observer: Weak, body: (Value) -> Void)] = []

    func add(_ observer: AnyObject, _ body: @escaping (Value) -> Void) -> ObservationToken {
        let weak = Weak(observer)
        entries.append((weak, body))
        return ObservationToken(entry: nil) { [weak self] in
            self?.entries.removeAll { $0.observer === weak }
        }
    }

    func notify(_ value: Value) {
        entries.removeAll { $0.observer.object == nil }
        for entry in entries { entry.body(value) }
    }
}

/// A weak reference to an observer.
final class Weak {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}
