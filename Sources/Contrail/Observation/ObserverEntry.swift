/// One registered observation: what it listens for, whom it belongs to, and what to call.
/// Listed with `ChangeDelivery.main.sweep` under its observer, which releases it once the
/// observer is gone.
@MainActor
final class ObserverEntry: ObserverRegistration {
    enum Event {
        /// Property changes: `properties` nil means every property.
        case change(immediate: Bool, properties: [Int]?)
        case collectionAdd(property: Int)
        case collectionRemove(property: Int)
        case treeChange
        case attach
        case detach
        case addedToParent
        case removedFromParent
    }

    enum Callback {
        case plain(() -> Void)
        /// Receives the observed object, so the closure need not capture it.
        case subject((ModelObject) -> Void)
        case element((ModelObject, Int) -> Void)
        /// Receives the host (scope) the object joined or left.
        case host((ModelObjectHost) -> Void)
        case parent((ModelObject, String) -> Void)
        /// Cancelled or released: the closure is gone.
        case released
    }

    let event: Event
    /// Dropped (`.released`) by `release()`, so the closure goes even while a queue still holds the entry.
    private(set) var callback: Callback
    /// Held weakly: once the observer is gone, the entry is dropped.
    weak var observer: AnyObject?
    weak var subject: ModelObject?
    var isCancelled = false
    /// Queued and waiting for the end of the run-loop turn.
    var isPending = false

    init(event: Event, callback: Callback, observer: AnyObject, subject: ModelObject) {
        self.event = event
        self.callback = callback
        self.observer = observer
        self.subject = subject
        ChangeDelivery.main.sweep.register(self, for: observer)
    }

    var isReleased: Bool {
        if case .released = callback { return true }
        return false
    }

    func release() {
        guard !isReleased else { return }
        isCancelled = true
        callback = .released
        subject?._removeObserverEntries { $0 === self }
    }

    var isLive: Bool { !isCancelled && observer != nil }

    /// Runs a plain or subject callback now (queued delivery and immediate changes).
    /// An entry whose observer is gone is removed from its subject here, releasing its closure.
    func fire() {
        guard !isCancelled else { return }
        guard observer != nil else {
            release()
            return
        }
        switch callback {
        case .plain(let body): body()
        case .subject(let body): if let subject { body(subject) }
        case .element, .host, .parent, .released: break
        }
    }
}
