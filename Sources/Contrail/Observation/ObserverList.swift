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

    /// The values from now on as an `AsyncStream`, starting with `current` if given, buffered as
    /// `bufferingPolicy` says. The stream ends when this list is freed (its owner is gone).
    func stream(startingWith current: Value?, bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy) -> AsyncStream<Value>
    where Value: Sendable {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: bufferingPolicy)
        if let current { continuation.yield(current) }
        let finisher = StreamFinisher(continuation)
        let token = add(finisher) { finisher.continuation.yield($0) }
        continuation.onTermination = { _ in
            Task { @MainActor in token.cancel() }
        }
        return stream
    }
}

/// A weak reference to an observer.
final class Weak {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}
