import ContrailSupport

/// A change set's reply queued in its place in the sending session's outbox (numbered in order with
/// everything around it) but not sent until the change set's log record is durable: broadcasts to
/// the other sessions go out at once, while this session, whose client learns from the reply that
/// its change is safe, sees nothing of the scope's later changes before the reply (everything
/// queued for it after the reply waits too, so it sees the scope's order).
final class HeldReply: Sendable {
    /// Where the reply was queued, and its index; nil before ``place(_:in:)`` (or when the outbox refused it).
    private let placed = SanitizerVisibleMutex<(outbox: SessionOutbox, index: Int)?>(nil)

    init() {}

    /// Queues the reply `make` builds, held.
    func place(_ make: (Int) -> OutgoingMessage, in outbox: SessionOutbox) {
        guard let index = outbox.enqueueHeld(make) else { return }
        placed.withLock { $0 = (outbox, index) }
    }

    /// Sends the reply (or, with `replacement`, what it builds instead) and what waited behind it.
    func release(replacingWith replacement: ((Int) -> OutgoingMessage)? = nil) {
        guard let (outbox, index) = placed.withLock({ placed in
            defer { placed = nil }
            return placed
        }) else { return }
        outbox.release(index, replacingWith: replacement)
    }
}
