/// Callbacks registered by weakly held observers, each removable through the token its
/// registration returns. The callbacks of an observer that is gone are released at the end of the
/// next delivery turn (`ObserverSweep`), or at the next `notify`, whichever comes first.
@MainActor
final class ObserverList<Value> {
    /// One callback of one observer.
    @MainActor
    final class Registration: ObserverRegistration {
        weak var observer: AnyObject?
        private(set) var body: ((Value) -> Void)?
        weak var list: ObserverList?

        init(observer: AnyObject, body: @escaping (Value) -> Void, list: ObserverList) {
            self.observer = observer
            self.body = body
            self.list = list
        }

        var isReleased: Bool { body == nil }

        func release() {
            guard body != nil else { return }
            body = nil
            list?.registrations.removeAll { $0 === self }
        }
    }

    private var registrations: [Registration] = []

    /// Registers `body` for `observer`. O(1).
    func add(_ observer: AnyObject, _ body: @escaping (Value) -> Void) -> ObservationToken {
        let registration = Registration(observer: observer, body: body, list: self)
        registrations.append(registration)
        ChangeDelivery.main.sweep.register(registration, for: observer)
        return ObservationToken(entry: registration)
    }

    /// Whether some registered observer is still alive. O(registrations).
    var hasLiveObservers: Bool { registrations.contains { $0.observer != nil } }

    /// Calls every live observer's callback with `value`. O(registrations).
    func notify(_ value: Value) {
        for registration in registrations where registration.observer == nil { registration.release() }
        // A copy: a callback may add or cancel registrations.
        for registration in registrations where registration.observer != nil {
            registration.body?(value)
        }
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
