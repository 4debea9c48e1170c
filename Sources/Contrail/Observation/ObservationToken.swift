/// Returned by every `observe…` call: `cancel()` stops that one observation.
/// Dropping the token does not cancel it (the observer's lifetime does), so it may be ignored.
@MainActor
public final class ObservationToken {
    private weak var entry: ObserverEntry?
    private var onCancel: (() -> Void)?

    init(entry: ObserverEntry?, onCancel: (() -> Void)? = nil) {
        self.entry = entry
        self.onCancel = onCancel
    }

    /// Stops delivery. Calling it again does nothing.
    public func cancel() {
        if let entry, !entry.isCancelled {
            entry.isCancelled = true
            entry.subject?._removeObserverEntries { $0 === entry }
        }
        onCancel?()
        onCancel = nil
    }

    /// Whether `cancel()` was called (or the observed object is gone).
    public var isCancelled: Bool { entry?.isCancelled ?? (onCancel == nil) }
}
