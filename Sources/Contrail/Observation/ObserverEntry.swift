/// One registered observation: what it listens for, whom it belongs to, and what to call.
@MainActor
final class ObserverEntry {
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
        case scope((Scope) -> Void)
        case parent((ModelObject, String) -> Void)
    }

    let event: Event
    let callback: Callback
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
    }

    var isLive: Bool { !isCancelled && observer != nil }

    func matchesChange(of property: Int, immediate: Bool) -> Bool {
        guard case .change(let isImmediate, let properties) = event, isImmediate == immediate else { return false }
        return properties?.contains(property) ?? true
    }

    /// Runs a plain or subject callback now (queued delivery and immediate changes).
    /// An entry whose observer is gone is removed from its subject here, releasing its closure.
    func fire() {
        guard !isCancelled else { return }
        guard observer != nil else {
            subject?._removeObserverEntries { $0 === self }
            return
        }
        switch callback {
        case .plain(let body): body()
        case .subject(let body): if let subject { body(subject) }
        case .element, .scope, .parent: break
        }
    }
}
