import ContrailWire
import ContrailWebSocket
import Synchronization

/// Writes a session's outbox to one connection's transport, in a task that exists only while there
/// is something to write: an idle session holds no writer task (a waiting task would keep its stack
/// memory for the life of the connection).
///
/// States: `idle` (no task), `running` (a task is draining), `rerun` (woken while running: the task
/// looks again before it ends), `stopped` (the connection is done, or a send failed; never restarts).
final class OutboxWriter: Sendable {
    private enum Phase { case idle, running, rerun, stopped }

    private let phase = SanitizerVisibleMutex(Phase.idle)
    private let outbox: SessionOutbox
    private let transport: any SyncTransport
    private let core: ServerCore
    private let token: String
    /// The outbox attachment this writer belongs to (set once, before the first wake can start a task).
    private let generation = Atomic<Int>(0)

    init(outbox: SessionOutbox, transport: any SyncTransport, core: ServerCore, token: String) {
        self.outbox = outbox
        self.transport = transport
        self.core = core
        self.token = token
    }

    /// Attaches to the outbox (see ``SessionOutbox/attach(_:resumed:)``) and writes whatever it queues.
    func attach(resumed: Bool) {
        // Wakes before the generation is known are held back by `phase`: the first real run starts below.
        phase.withLock { $0 = .rerun }
        generation.store(outbox.attach({ [weak self] in self?.wake() }, resumed: resumed), ordering: .releasing)
        let start = phase.withLock { phase -> Bool in
            guard phase == .rerun else { return false }
            phase = .running
            return true
        }
        if start { Task { await drain() } }
    }

    /// Stops writing and detaches from the outbox (messages stay queued for the next connection).
    func stop() {
        phase.withLock { $0 = .stopped }
        outbox.detach(generation: generation.load(ordering: .acquiring))
    }

    /// Something was queued: start a task unless one is running (which then looks again). Held back
    /// while the task that queued it handles a burst of frames (``DeliveryBatch``).
    private func wake() {
        if let batch = DeliveryBatch.current {
            batch.hold { [weak self] in self?.wakeNow() }
            return
        }
        wakeNow()
    }

    private func wakeNow() {
        let start = phase.withLock { phase -> Bool in
            switch phase {
            case .idle:
                phase = .running
                return true
            case .running, .rerun:
                if phase == .running { phase = .rerun }
                return false
            case .stopped:
                return false
            }
        }
        if start { Task { await drain() } }
    }

    /// Writes until the outbox is empty. Frames stay within the message limit (and small, so a close
    /// frame is not stuck behind much); a single message over the limit cannot be delivered: the
    /// session ends with the reason instead of stalling.
    private func drain() async {
        let maxBytes = core.limits.maxMessageBytes
        let generation = generation.load(ordering: .acquiring)
        while true {
            let batch = outbox.takePending(generation: generation)
            if batch.isEmpty {
                let done = phase.withLock { phase -> Bool in
                    switch phase {
                    case .rerun:
                        phase = .running
                        return false
                    case .running:
                        phase = .idle
                        return true
                    case .idle, .stopped:
                        return true
                    }
                }
                if done { return }
                continue
            }
            for frame in OutgoingMessage.frames(batch, maxBytes: min(maxBytes, 1 << 20)) {
                guard frame.utf8.count <= maxBytes else {
                    phase.withLock { $0 = .stopped }
                    core.expireSession(token: token, reason: .limitExceeded(
                        "A message of \(frame.utf8.count) bytes is over the message limit of \(maxBytes) bytes; start a new session"))
                    return
                }
                do {
                    try await transport.send(frame)
                } catch {
                    phase.withLock { $0 = .stopped }
                    return
                }
            }
        }
    }
}
