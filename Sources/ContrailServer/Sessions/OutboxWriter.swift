import ContrailWire
import ContrailWebSocket
import Synchronization

/// Writes a session's outbox to one connection's transport: at the end of a burst on the task that
/// delivered it, while the transport takes frames without waiting, and otherwise in a task that
/// exists only while there is something to write (an idle session holds no writer task: a waiting
/// task would keep its stack memory for the life of the connection).
///
/// States: `idle` (no run), `running` (a run is writing, inline or in its task), `rerun` (woken
/// while running: the run looks again before it ends), `stopped` (the connection is done, or a
/// send failed; never restarts).
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

    /// Something was queued: write it unless a run is under way (which then looks again). Held back
    /// while the task that queued it handles a burst of frames (``DeliveryBatch``), and written on
    /// that task when the burst ends; otherwise (the outbox calls this under its lock) by a new task.
    private func wake() {
        if let batch = DeliveryBatch.current, batch.hold({ [weak self] in self?.wakeNow(inline: true) }) { return }
        wakeNow(inline: false)
    }

    /// Starts a run unless one is under way: `inline`, on the calling thread for as long as the
    /// transport takes frames without waiting (no task and no thread hop per reader and burst),
    /// then in a task.
    private func wakeNow(inline: Bool) {
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
        guard start else { return }
        guard inline else {
            Task { await drain() }
            return
        }
        guard let carried = writeWithoutWaiting() else { return }
        Task { await drain(carried) }
    }

    /// Writes what is queued on the calling thread while the transport takes frames without
    /// waiting. Returns the frames left for a task to write when the transport would wait, nil when
    /// the run is over.
    private func writeWithoutWaiting() -> [String]? {
        let generation = generation.load(ordering: .acquiring)
        while let frames = nextFrames(generation: generation) {
            for (index, frame) in frames.enumerated() {
                do {
                    guard try transport.sendWithoutWaiting(frame) else { return Array(frames[index...]) }
                } catch {
                    phase.withLock { $0 = .stopped }
                    return nil
                }
            }
        }
        return nil
    }

    /// Writes `carried`, then until the outbox is empty.
    private func drain(_ carried: [String] = []) async {
        let generation = generation.load(ordering: .acquiring)
        var frames = carried
        repeat {
            for frame in frames {
                do {
                    try await transport.send(frame)
                } catch {
                    phase.withLock { $0 = .stopped }
                    return
                }
            }
            guard let next = nextFrames(generation: generation) else { return }
            frames = next
        } while true
    }

    /// The next frames to write, nil when the outbox is empty and the run ends (the phase then
    /// says whether a wake came in meanwhile: then it looks again). Frames stay within the message
    /// limit (and small, so a close frame is not stuck behind much); a single message over the
    /// limit cannot be delivered: the session ends with the reason instead of stalling (nil).
    private func nextFrames(generation: Int) -> [String]? {
        let maxBytes = core.limits.maxMessageBytes
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
                if done { return nil }
                continue
            }
            let frames = OutgoingMessage.frames(batch, maxBytes: min(maxBytes, 1 << 20))
            if let oversized = frames.first(where: { $0.utf8.count > maxBytes }) {
                phase.withLock { $0 = .stopped }
                core.expireSession(token: token, reason: .limitExceeded(
                    "A message of \(oversized.utf8.count) bytes is over the message limit of \(maxBytes) bytes; start a new session"))
                return nil
            }
            return frames
        }
    }
}
