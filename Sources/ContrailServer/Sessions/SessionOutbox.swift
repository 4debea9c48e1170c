import ContrailWire
import ContrailWebSocket

/// A session's outgoing side, safe to use from any task: numbers sequenced messages, keeps them
/// until the client acknowledges them (the resend buffer, bounded in bytes), and queues them for
/// the writer of the connection currently attached. Scopes enqueue broadcasts here synchronously,
/// so each session sees a scope's changes in the scope's order without awaiting anything.
///
/// Each message is sent once per connection: after a resume, sequenced messages wait in the
/// resend buffer for the client's `Ping{resendMissing:true}` (§1.6), which sends them all in
/// order, instead of also being queued for the new connection (or, for a client that skips the
/// exchange, until its first other message: ``releaseBacklog()``).
final class SessionOutbox: Sendable {
    private struct State {
        var nextIndex = 1
        /// Sent or queued sequenced messages not yet acknowledged, in index order, from `start`.
        var unacked: [OutgoingMessage] = []
        var start = 0
        /// Estimated bytes of `unacked[start...]`.
        var unackedBytes = 0
        /// A resumed connection is attached and the client has not asked for the resend yet.
        var awaitingResend = false
        /// Messages queued for the next frame.
        var pending: [OutgoingMessage] = []
        /// Wakes the attached connection's writer (called under the lock: it must not call back in).
        var wake: (@Sendable () -> Void)?
        /// Counts attachments, so a late detach of an old connection does not detach a newer one.
        var generation = 0
        var overflowed = false
        /// The highest client index accepted (what our pings acknowledge).
        var clientIndex = 0
        /// States streamed in parts (§8.25), in fetch order: the first one's parts are numbered as
        /// acknowledgements make room; the others wait for it.
        var streams: [StateStream] = []
        /// The indices of replies queued in their place but not to be sent yet (``HeldReply``),
        /// ascending: nothing queued from the first of them on is taken.
        var held: [Int] = []
        /// The index of the last part numbered, and the highest index the client acknowledged:
        /// a part is under way while the first is above the second.
        var lastPartIndex = 0
        var acknowledged = 0
    }

    private let state = SanitizerVisibleMutex(State())
    /// The most bytes (estimated) of unacknowledged messages kept.
    let limitBytes: Int
    /// Ends the session with a reason: once, when the resend buffer goes over its limit, or when a
    /// scope can no longer vouch for what it sent the session (``end(_:)``).
    private let onEnd: @Sendable (WireErrorBody) -> Void
    /// Who the session's change sets come from, as the JSON text of a broadcast's `origin`
    /// (`{"session": 12, "user": "alice"}`); nil: nobody is told.
    let origin: String?
    /// Whether broadcasts to this session carry their `origin` (an admin's session that asked, with
    /// SessionCreate params `{"contrailOrigins": true}`: the inspector).
    let receivesOrigins: Bool
    /// Whether broadcasts to this session carry collections as edits of the values it last received
    /// (a Contrail client that asked, with SessionCreate params `{"contrailCollectionOps": true}`,
    /// Protocol §8.24); otherwise they carry whole arrays, as to an original client.
    let receivesCollectionEdits: Bool

    /// An outbox whose resend buffer holds at most `limitBytes` of unacknowledged messages (one
    /// message is always kept, whatever its size).
    init(limitBytes: Int, origin: String? = nil, receivesOrigins: Bool = false, receivesCollectionEdits: Bool = false,
         onEnd: @escaping @Sendable (WireErrorBody) -> Void) {
        self.limitBytes = max(1, limitBytes)
        self.origin = origin
        self.receivesOrigins = receivesOrigins
        self.receivesCollectionEdits = receivesCollectionEdits
        self.onEnd = onEnd
    }

    /// The most unacknowledged bytes (estimated) under which the next part of a streamed state is
    /// numbered and sent: half the resend buffer, so that the other messages always have the other half.
    var streamBudget: Int { limitBytes / 2 }

    /// Numbers a sequenced message (`make` gets its index) and queues it. Returns false (and
    /// queues nothing) once the resend buffer has overflowed.
    @discardableResult
    func enqueue(_ make: (Int) -> OutgoingMessage) -> Bool {
        enqueue(make, held: false) != nil
    }

    /// Numbers and queues a reply that is not sent, nor anything queued after it, until
    /// ``release(_:replacingWith:)``; returns its index (nil, queuing nothing, once the resend
    /// buffer has overflowed). See ``HeldReply``.
    func enqueueHeld(_ make: (Int) -> OutgoingMessage) -> Int? {
        enqueue(make, held: true)
    }

    private func enqueue(_ make: (Int) -> OutgoingMessage, held: Bool) -> Int? {
        let (index, overflowNow) = state.withLock { state -> (Int?, Bool) in
            if state.overflowed { return (nil, false) }
            let index = state.nextIndex
            let message = make(index)
            let size = message.estimatedSize
            if state.unackedBytes + size > limitBytes, state.unacked.count > state.start {
                state.overflowed = true
                state.pending.removeAll()
                state.streams.removeAll()
                return (nil, true)
            }
            if held { state.held.append(index) }
            Self.append(message, size: size, to: &state)
            return (index, false)
        }
        if overflowNow { onEnd(.limitExceeded("Resend buffer is full (\(limitBytes) bytes unacknowledged); start a new session")) }
        return index
    }

    /// Lets the held reply numbered `index` go, with everything queued after it up to the next held
    /// one; `replacement` (given the index) takes its place first. O(queued messages).
    func release(_ index: Int, replacingWith replacement: ((Int) -> OutgoingMessage)? = nil) {
        state.withLock { state in
            guard let position = state.held.firstIndex(of: index) else { return }
            state.held.remove(at: position)
            if let replacement {
                let message = replacement(index)
                if let first = state.unacked[state.start...].first, index >= first.index,
                   index - first.index < state.unacked.count - state.start {
                    let slot = state.start + index - first.index
                    state.unackedBytes += message.estimatedSize - state.unacked[slot].estimatedSize
                    state.unacked[slot] = message
                }
                if let slot = state.pending.firstIndex(where: { $0.index == index }) { state.pending[slot] = message }
            }
            if !state.pending.isEmpty { state.wake?() }
        }
    }

    /// Ends the session with `reason` (a scope lost what it sent the session: its client must start over).
    func end(_ reason: WireErrorBody) {
        onEnd(reason)
    }

    /// Streams a full state in `parts` (§8.25) after everything queued so far: each part is numbered
    /// when it is sent, which is once the client has acknowledged enough of the earlier ones
    /// (``streamBudget``). Messages queued meanwhile go out between the parts. O(1) here.
    func enqueueStream(_ stream: StateStream) {
        state.withLock { state in
            guard !state.overflowed else { return }
            state.streams.append(stream)
            releaseParts(&state)
        }
    }

    /// Appends the next part a producer encoded (nil: none, only news of the end) to the produced
    /// stream `id` of a state of `total` objects; `finished`: no part follows. Returns false when
    /// the stream is gone (the scope was left, the session ended): the producer stops.
    /// O(streams) to find it.
    func supply(_ part: ScopeStateChunk.Part?, total: Int, finished: Bool, to id: StateStream.ID) -> Bool {
        state.withLock { state in
            guard !state.overflowed, let position = state.streams.firstIndex(where: { $0.id == id }) else { return false }
            state.streams[position].append(part, total: total, finished: finished)
            if position == 0 { releaseParts(&state) }
            return true
        }
    }

    /// Drops the parts not yet sent of the states streamed to `scopeIndex` (the scope was left).
    func cancelStreams(scopeIndex: Int) {
        state.withLock { state in state.streams.removeAll { $0.scopeIndex == scopeIndex } }
    }

    /// The parts of streamed states not yet sent (for tests and logs).
    var unsentParts: Int { state.withLock { $0.streams.reduce(0) { $0 + $1.remaining.count } } }

    /// Numbers the next parts of the first streamed state while the resend buffer has room for them
    /// (always one when no part is under way, whatever else waits for its acknowledgement).
    private func releaseParts(_ state: inout State) {
        while let stream = state.streams.first {
            guard let part = stream.next(index: state.nextIndex) else {
                // A produced stream waits for its producer's next part (``supply(_:total:finished:to:)``).
                guard stream.isComplete else { return }
                state.streams.removeFirst()
                continue
            }
            let size = part.estimatedSize
            guard state.lastPartIndex <= state.acknowledged || state.unackedBytes + size <= streamBudget else { return }
            state.streams[0].advance()
            state.lastPartIndex = state.nextIndex
            Self.append(part, size: size, to: &state)
        }
    }

    /// Takes a numbered message into the resend buffer and, unless a resume waits for its resend
    /// exchange, into the next frame.
    /// Both queues start at room for ``initialCapacity`` messages when they were emptied (taken
    /// whole, or all acknowledged), rather than grow one reallocation at a time per burst. The
    /// writer is woken when the pending queue stops being empty, unless by a held reply.
    private static func append(_ message: OutgoingMessage, size: Int, to state: inout State) {
        state.nextIndex += 1
        if state.unacked.isEmpty { state.unacked.reserveCapacity(initialCapacity) }
        state.unacked.append(message)
        state.unackedBytes += size
        if state.awaitingResend { return }
        if state.pending.isEmpty { state.pending.reserveCapacity(initialCapacity) }
        state.pending.append(message)
        // A held reply alone gives the writer nothing to take: its release wakes it.
        if state.pending.count == 1, state.held.last != message.index { state.wake?() }
    }

    /// Queues an unsequenced message (`SessionCreateReply`, `Ping`): not buffered for resend.
    func enqueueUnsequenced(_ message: OutgoingMessage) {
        state.withLock { state in
            state.pending.append(message)
            if state.pending.count == 1 { state.wake?() }
        }
    }

    /// Queues a keep-alive `Ping` acknowledging the client's last index.
    func enqueuePing() {
        state.withLock { state in
            state.pending.append(.message(.ping(Ping(ack: state.clientIndex, resendMissing: false))))
            if state.pending.count == 1 { state.wake?() }
        }
    }

    /// Asks the client to resend what we are missing (§8.5): `Ping{resendMissing:true}`.
    func enqueueResendRequest() {
        state.withLock { state in
            state.pending.append(.message(.ping(Ping(ack: state.clientIndex, resendMissing: true))))
            if state.pending.count == 1 { state.wake?() }
        }
    }

    /// Records the highest client index accepted.
    func setClientIndex(_ index: Int) {
        state.withLock { $0.clientIndex = index }
    }

    /// Drops the messages the client acknowledged (`index <= ack`).
    func acknowledge(_ ack: Int) {
        state.withLock { state in
            Self.prune(&state, ack: ack)
            releaseParts(&state)
        }
    }

    /// The resend exchange (§1.6): prunes by `ack`, then replaces whatever is queued with one
    /// frame: our `Ping{resendMissing:true}` and every message still unacknowledged.
    func resend(after ack: Int) {
        state.withLock { state in
            Self.prune(&state, ack: ack)
            state.awaitingResend = false
            state.pending.removeAll(keepingCapacity: true)
            state.pending.append(.message(.ping(Ping(ack: state.clientIndex, resendMissing: true))))
            state.pending.append(contentsOf: state.unacked[state.start...])
            state.wake?()
            releaseParts(&state)
        }
    }

    /// After a resume, queues the backlog for a client that did not start with the resend
    /// exchange. Does nothing otherwise.
    func releaseBacklog() {
        state.withLock { state in
            guard state.awaitingResend else { return }
            state.awaitingResend = false
            state.pending.append(contentsOf: state.unacked[state.start...])
            if !state.pending.isEmpty { state.wake?() }
        }
    }

    /// Takes everything queued (the writer splits it into frames); empty when nothing is, or when
    /// attachment `generation` is no longer the current one.
    func takePending(generation: Int) -> [OutgoingMessage] {
        state.withLock { state in
            guard !state.pending.isEmpty, state.generation == generation, state.wake != nil else { return [] }
            if let firstHeld = state.held.first {
                // Up to the first held reply: a held reply's index is only ever in `pending` once.
                guard let cut = state.pending.firstIndex(where: { $0.index != 0 && $0.index >= firstHeld }) else {
                    return Self.takeAll(&state)
                }
                let taken = Array(state.pending[..<cut])
                state.pending.removeFirst(cut)
                return taken
            }
            return Self.takeAll(&state)
        }
    }

    /// The messages an emptied queue makes room for at once: a burst's worth for one reader.
    static let initialCapacity = 16

    private static func takeAll(_ state: inout State) -> [OutgoingMessage] {
        let taken = state.pending
        state.pending = []   // moved out whole: nothing is copied, and an idle session keeps no buffer
        return taken
    }

    /// Connects the writer of a newly attached connection (replacing the previous one) and
    /// returns the attachment's generation, for ``detach(generation:)``. On a resume
    /// (`resumed`), queued sequenced messages are left to the resend exchange, so they are sent once.
    func attach(_ wake: @escaping @Sendable () -> Void, resumed: Bool) -> Int {
        state.withLock { state in
            state.wake = wake
            state.generation += 1
            if resumed {
                state.awaitingResend = true
                state.pending.removeAll { $0.index != 0 }
            }
            if !state.pending.isEmpty { wake() }
            return state.generation
        }
    }

    /// Disconnects the writer of attachment `generation` if it is still the current one (messages
    /// stay queued and buffered for the next connection).
    func detach(generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.wake = nil }
        }
    }

    /// The number of unacknowledged messages (for tests and logs).
    var unackedCount: Int { state.withLock { $0.unacked.count - $0.start } }

    /// The estimated bytes of unacknowledged messages.
    var unackedBytes: Int { state.withLock { $0.unackedBytes } }

    private static func prune(_ state: inout State, ack: Int) {
        state.acknowledged = max(state.acknowledged, ack)
        while state.start < state.unacked.count, state.unacked[state.start].index <= ack {
            state.unackedBytes -= state.unacked[state.start].estimatedSize
            state.start += 1
        }
        if state.start == state.unacked.count {
            state.unacked = []   // an idle session keeps no buffer
            state.unackedBytes = 0
            state.start = 0
        } else if state.start > 1024, state.start * 2 > state.unacked.count {
            state.unacked.removeFirst(state.start)
            state.start = 0
        }
    }
}
