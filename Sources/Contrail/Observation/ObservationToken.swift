/// Returned by every `observe…` call: `cancel()` stops that one observation.
/// Dropping the token does not cancel it (the observer's lifetime does), so it may be ignored.
@MainActor
public final class ObservationToken {
    private weak var registration: (any ObserverRegistration)?

    init(entry registration: any ObserverRegistration) {
        self.registration = registration
    }

    /// Stops delivery and releases the callback (and what it captured) at once. Calling it again
    /// does nothing.
    public func cancel() {
        registration?.release()
    }

    /// Whether `cancel()` was called, the observer is gone and its callback released, or the
    /// observed object is gone.
    public var isCancelled: Bool { registration?.isReleased ?? true }
}
