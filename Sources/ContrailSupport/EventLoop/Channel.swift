import Synchronization

/// Receives a channel's events, on the loop thread.
package protocol ChannelDelegate: AnyObject {
    /// Bytes arrived. The buffer is the loop's shared read buffer: use or copy it before returning.
    func channelRead(_ bytes: UnsafeRawBufferPointer)
    /// The peer closed its side (errno nil) or the socket failed (errno). Reading has stopped;
    /// the delegate decides when to close.
    func channelEnded(errno: Int32?)
    /// The descriptor is closed; called exactly once.
    func channelClosed()
    /// Offers the next read straight into the delegate's own memory, skipping the shared buffer and a
    /// copy: call `read` at most once with the destination, handle the bytes it brought (as
    /// `channelRead` would) and return its outcome; return nil without calling it to decline.
    func channelReadDirectly(_ read: (UnsafeMutableRawBufferPointer) -> Socket.IOResult) -> Socket.IOResult?
}

extension ChannelDelegate {
    /// Declines: reads go through the loop's shared buffer.
    package func channelReadDirectly(_ read: (UnsafeMutableRawBufferPointer) -> Socket.IOResult) -> Socket.IOResult? { nil }
}

/// A connected, non-blocking stream socket on an `EventLoop`: reads into the loop's shared buffer (or
/// into the delegate's memory, `channelReadDirectly`) and hands the bytes to its delegate; buffers writes
/// from any thread, writing straight to the socket when nothing is queued, and tells writers to wait
/// while more than `highWater` bytes are queued. Large payloads are queued by reference and written
/// from their own storage, gathered with the bytes around them in one `sendmsg`.
///
/// Reads, `close` and the delegate belong to the loop thread; `write`, `waitForRoom`, `setReading` and the
/// flush-then-close requests are safe from any thread.
///
/// With a `ChannelSecurity` (TLS) the channel drives it between the socket and the delegate: what is
/// read is decrypted before the delegate sees it, what is written is encrypted when it is flushed
/// (writes made before the handshake finishes wait for it), and closing sends its closing alert. A
/// channel without one never touches those paths. A plaintext channel can take one later, once, with
/// nothing queued either way (`startSecurity`: STARTTLS-style protocols such as NATS).
///
/// Its lifecycle is one state machine (`ChannelLifecycle`): unregistered → active(input, output) →
/// (failed) → closed, each direction of an active channel moving on its own (reading ⇄ paused → ended;
/// open → sealed → FIN or close once flushed). The queue and the waiting writers are data beside it.
///
/// `@unchecked Sendable` invariant: `delegate` is set by the owner's initializer before the channel is
/// handed to its loop and is otherwise touched only on the loop thread (asserted in debug builds);
/// everything else that changes (the security layer too) is in `state`, under its lock.
package final class Channel: EventLoopHandler, @unchecked Sendable {
    /// What became of a write.
    package enum WriteOutcome {
        /// Queued or written; `pending` bytes are still waiting for the socket.
        case accepted(pending: Int)
        /// Refused: the output was sealed (e.g. after a WebSocket close frame).
        case sealed
        /// Refused: the channel is closed or broken.
        case closed
    }

    let loop: EventLoop
    let fd: Int32
    /// Writers wait while more than this many bytes are queued.
    package let highWater: Int
    /// Waiting writers resume once the queue is at or below this.
    let lowWater: Int
    /// Loop-thread only (see the invariant above).
    package var delegate: (any ChannelDelegate)?
    private struct State {
        /// The record layer (TLS) between socket and delegate, if any; called only under this lock.
        var security: (any ChannelSecurity)?
        /// The loop registration id (0: not registered).
        var id: UInt64 = 0
        /// Queued bytes; `out[..<head]` are written.
        var out: [UInt8] = []
        var head = 0
        /// Payloads queued by reference, in order: each goes on the wire right after `out[..<offset]`.
        var held: [Held] = []
        /// Bytes of `held` not yet written.
        var heldPending = 0
        /// Plaintext written and not yet encrypted (with a security layer only): a read burst's gathered
        /// writes, or everything written before the handshake finished.
        var plain: [UInt8] = []
        /// Bytes ready for the socket.
        var wirePending: Int { out.count - head + heldPending }
        /// Bytes still to be written (writers wait on this).
        var pending: Int { out.count - head + heldPending + plain.count }
        /// What the poller watches the descriptor for now.
        var registered: Interest = []
        var lifecycle = ChannelLifecycle()
        /// Set by the loop thread while it hands a read burst to the delegate: writes made meanwhile are
        /// gathered and written once when the burst ends.
        var gathering = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: SanitizerVisibleMutex<State>

    /// A payload queued by reference (`write(seal:payload:_:)`).
    private struct Held {
        /// Where in `out` it goes: after `out[..<offset]`, before `out[offset...]`.
        var offset: Int
        let payload: OutboundPayload
        /// Its bytes already written.
        var written = 0
    }

    /// A read burst ends early once this many bytes wait to be written. Small enough that a peer with
    /// a few large messages in flight gets each echo while it sends the next (a larger batch left it
    /// waiting for the whole window: 64 KiB × 16 on one connection ran at 0.73× swift-nio), large
    /// enough that small echoes still go out thousands per write.
    private static let burstWriteLimit = 64 * 1024

    /// At most this many pieces (bytes and held payloads) go into one `sendmsg`.
    private static let maxPieces = 16

    package init(fd: Int32, loop: EventLoop, highWater: Int, security: (any ChannelSecurity)? = nil) {
        self.fd = fd
        self.loop = loop
        self.state = SanitizerVisibleMutex(State(security: security))
        self.highWater = max(1, highWater)
        self.lowWater = max(1, highWater) / 2
    }

    /// Registers with the loop, reading. Loop thread only.
    package func register() throws(NetworkError) {
        loop.assertOnLoop()
        let id = try loop.register(fd, interest: .read, handler: self)
        let secured = state.withLock { s -> Bool in
            _ = s.lifecycle.handle(.registered)
            s.id = id
            s.registered = .read
            guard let security = s.security else { return false }
            security.start()
            security.takeOutput(into: &s.out)
            return true
        }
        if secured { _ = flush(gatheringEnds: false) }
    }

    /// Puts `security` under a registered plaintext channel and starts its handshake (a client's first
    /// flight is written now). Only with nothing queued to write and nothing read beyond what the owner
    /// has consumed: bytes the owner still holds from the socket would otherwise pass as plaintext the
    /// layer never saw. Loop thread only; the owner makes no writes meanwhile.
    /// - Returns: false (and installs nothing) when the channel already has one, is not active, or has
    ///   bytes queued.
    package func startSecurity(_ security: any ChannelSecurity) -> Bool {
        loop.assertOnLoop()
        let started = state.withLock { s -> Bool in
            guard s.security == nil, s.id != 0, case .active = s.lifecycle.state, s.pending == 0, !s.gathering else {
                return false
            }
            s.security = security
            security.start()
            security.takeOutput(into: &s.out)
            return true
        }
        if started { _ = flush(gatheringEnds: false) }
        return started
    }

    // MARK: Writing (any thread)

    /// Appends bytes with `fill`, then `payload` (by reference, not copied), and writes what the socket
    /// takes now.
    /// - Parameter seal: refuse every later write (the last frame of a protocol).
    @discardableResult
    package func write(seal: Bool = false, payload: OutboundPayload? = nil, _ fill: (inout [UInt8]) -> Void) -> WriteOutcome {
        var resume: [CheckedContinuation<Void, Never>] = []
        var closeNow = false
        let outcome = state.withLock { s -> WriteOutcome in
            switch s.lifecycle.handle(.write(seal: seal), fallback: .refuseClosed) {
            case .acceptWrite: break
            case .refuseSealed: return .sealed
            default: return .closed
            }
            if let security = s.security {
                appendSecuredLocked(security, &s, payload: payload, fill)
            } else {
                appendLocked(&s, payload: payload, fill)
            }
            if !s.registered.contains(.write) && !s.gathering {
                (resume, closeNow) = flushLocked(&s)
            }
            return .accepted(pending: s.pending)
        }
        for waiter in resume { waiter.resume() }
        if closeNow { closeSoon() }
        return outcome
    }

    /// Queues `fill`'s bytes and `payload` (by reference) for the socket.
    private func appendLocked(_ s: inout State, payload: OutboundPayload?, _ fill: (inout [UInt8]) -> Void) {
        if s.head > 0 && s.head >= s.out.count / 2 {
            s.out.removeSubrange(0..<s.head)
            for i in s.held.indices { s.held[i].offset -= s.head }
            s.head = 0
        }
        fill(&s.out)
        if let payload, case let count = payload.count, count > 0 {
            s.held.append(Held(offset: s.out.count, payload: payload))
            s.heldPending += count
        }
    }

    /// Queues through the security layer: the plaintext joins `plain`, encrypted when flushed (large
    /// payloads straight from their storage once the handshake is done).
    private func appendSecuredLocked(_ security: any ChannelSecurity, _ s: inout State, payload: OutboundPayload?,
                                     _ fill: (inout [UInt8]) -> Void)
    {
        fill(&s.plain)
        if let payload {
            if payload.count >= Self.directEncryptionSize && security.isEstablished {
                encryptLocked(&s)
                if !payload.withBytes({ security.send($0) }) { failSecurityLocked(&s) }
                security.takeOutput(into: &s.out)
            } else {
                payload.withBytes { s.plain.append(contentsOf: $0) }
            }
        }
    }

    /// Payloads at least this large are encrypted from their own storage rather than copied first.
    private static let directEncryptionSize = 16 * 1024

    /// Encrypts `plain` into `out` once the handshake is done. With a security layer only.
    private func encryptLocked(_ s: inout State) {
        guard let security = s.security, !s.plain.isEmpty, security.isEstablished else { return }
        let ok = s.plain.withUnsafeBytes { security.send($0) }
        if s.plain.capacity > 4 * highWater + 65536 { s.plain = [] } else { s.plain.removeAll(keepingCapacity: true) }
        if !ok { failSecurityLocked(&s) }
        security.takeOutput(into: &s.out)
    }

    /// The security layer failed while writing: the channel fails as on a broken socket.
    private func failSecurityLocked(_ s: inout State) {
        s.plain = []
        if case .fail = s.lifecycle.handle(.writeFailed(errno: EPROTO)) {
            s.out = []
            s.head = 0
            s.held = []
            s.heldPending = 0
        }
    }

    /// Queues the security layer's closing alert after what is written so far (the handshake never
    /// finished: what waits for it is dropped). With a security layer only.
    private func closeSecurityLocked(_ s: inout State) {
        guard let security = s.security else { return }
        if security.isEstablished {
            encryptLocked(&s)
            security.close()
            security.takeOutput(into: &s.out)
        } else {
            s.plain = []
        }
    }

    /// Bytes queued and not yet taken by the socket.
    package var pendingByteCount: Int { state.withLock { $0.pending } }

    /// Suspends while more than `highWater` bytes are queued; returns at once when closed.
    package func waitForRoom() async {
        if state.withLock({ $0.pending <= highWater || $0.lifecycle.isDone }) { return }
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> Bool in
                if s.pending <= highWater || s.lifecycle.isDone { return true }
                s.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Whether the channel is closed or failed.
    package var isClosed: Bool { state.withLock { $0.lifecycle.isDone } }

    /// Starts or stops reading (inbound back-pressure). Any thread.
    package func setReading(_ on: Bool) {
        state.withLock { s in
            if s.lifecycle.handle(.setReading(on)) == .updateInterest { updateInterestLocked(&s) }
        }
    }

    /// Sends FIN once everything queued is written (and refuses later writes).
    package func shutdownOutputWhenFlushed() {
        var resume: [CheckedContinuation<Void, Never>] = []
        var closeNow = false
        state.withLock { s in
            closeSecurityLocked(&s)
            if s.lifecycle.handle(.shutdownOutputWhenFlushed(queueEmpty: s.pending == 0)) == .shutdownOutput {
                Socket.shutdownOutput(fd)
            } else if s.security != nil && !s.registered.contains(.write) && !s.gathering {
                (resume, closeNow) = flushLocked(&s)
            }
        }
        for waiter in resume { waiter.resume() }
        if closeNow { closeSoon() }
    }

    /// Closes the socket once everything queued is written (and refuses later writes).
    package func closeWhenFlushed() {
        var resume: [CheckedContinuation<Void, Never>] = []
        let now = state.withLock { s -> Bool in
            closeSecurityLocked(&s)
            if s.lifecycle.handle(.closeWhenFlushed(queueEmpty: s.pending == 0)) == .closeSoon { return true }
            guard s.security != nil && !s.registered.contains(.write) && !s.gathering else { return false }
            let closeNow: Bool
            (resume, closeNow) = flushLocked(&s)
            return closeNow
        }
        for waiter in resume { waiter.resume() }
        if now { closeSoon() }
    }

    /// Writes what the socket takes. Returns writers to resume and whether to close now.
    private func flushLocked(_ s: inout State) -> ([CheckedContinuation<Void, Never>], Bool) {
        encryptLocked(&s)
        while s.wirePending > 0 {
            let result: Socket.IOResult
            if s.held.isEmpty {
                result = s.out.withUnsafeBytes { all in
                    Socket.write(fd, UnsafeRawBufferPointer(rebasing: all[s.head...]))
                }
            } else {
                result = writeGathered(s)
            }
            switch result {
            case .done(let n):
                consume(n, &s)
                continue
            case .wouldBlock:
                break
            case .failed(let code):
                if case .fail = s.lifecycle.handle(.writeFailed(errno: code)) {
                    s.out = []
                    s.head = 0
                    s.held = []
                    s.heldPending = 0
                }
            }
            break
        }
        if s.wirePending == 0 {
            if s.out.capacity > 4 * highWater + 65536 {
                s.out = []
            } else {
                s.out.removeAll(keepingCapacity: true)
            }
            s.head = 0
        }
        let action = s.lifecycle.handle(.flushed(queueEmpty: s.pending == 0))
        if action == .shutdownOutput { Socket.shutdownOutput(fd) }
        updateInterestLocked(&s)
        var resume: [CheckedContinuation<Void, Never>] = []
        if !s.waiters.isEmpty && (s.pending <= lowWater || s.lifecycle.isDone) {
            resume = s.waiters
            s.waiters.removeAll()
        }
        return (resume, action == .closeSoon)
    }

    /// Writes the queued bytes and held payloads, in order, with one `sendmsg` (at most `maxPieces`
    /// pieces); the payloads' own storage goes to the kernel, not a copy.
    private func writeGathered(_ s: State) -> Socket.IOResult {
        s.out.withUnsafeBytes { out in
            withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: Self.maxPieces) { pieces in
                gather(out: out, held: s.held[...], position: s.head, into: pieces, used: 0)
            }
        }
    }

    /// Adds `out[position...]` up to the next held payload, then that payload (inside its `withBytes`,
    /// so its storage stays valid), recursively; at the end (or when `pieces` is full) writes them all.
    private func gather(out: UnsafeRawBufferPointer, held: ArraySlice<Held>, position: Int,
                        into pieces: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>, used: Int) -> Socket.IOResult
    {
        var used = used
        let end = held.first?.offset ?? out.count
        if end > position {
            guard used < pieces.count else { return Socket.write(fd, gathering: UnsafeBufferPointer(pieces)) }
            pieces[used] = UnsafeRawBufferPointer(rebasing: out[position..<end])
            used += 1
        }
        guard let next = held.first, used < pieces.count else {
            return Socket.write(fd, gathering: UnsafeBufferPointer(rebasing: pieces[..<used]))
        }
        return next.payload.withBytes { bytes in
            pieces[used] = UnsafeRawBufferPointer(rebasing: bytes[next.written...])
            return gather(out: out, held: held.dropFirst(), position: next.offset, into: pieces, used: used + 1)
        }
    }

    /// Marks `count` written bytes as sent, walking through `out` and the held payloads in wire order.
    private func consume(_ count: Int, _ s: inout State) {
        var left = count
        while left > 0 {
            let end = s.held.first?.offset ?? s.out.count
            if s.head < end {
                let take = min(left, end - s.head)
                s.head += take
                left -= take
                continue
            }
            // The next bytes are the first held payload's.
            let total = s.held[0].payload.count
            let take = min(left, total - s.held[0].written)
            s.held[0].written += take
            s.heldPending -= take
            left -= take
            if s.held[0].written == total { s.held.removeFirst() }
        }
    }

    /// Closes on the loop thread soon. When the loop has stopped it refuses the work, but then it
    /// closes this channel itself (`loopStopped`), if it has not already.
    private func closeSoon() {
        do {
            try loop.enqueue { [self] in close() }
        } catch {
            // Closed by the stopping loop.
        }
    }

    private func updateInterestLocked(_ s: inout State) {
        guard s.id != 0 else { return }
        var wanted: Interest = []
        switch s.lifecycle.state {
        case .active(let input, _):
            if input == .reading { wanted.insert(.read) }
            if s.wirePending > 0 { wanted.insert(.write) }
        case .failed:
            break  // nothing more to wait for: the channel closes next
        case .unregistered, .closed:
            return
        }
        if wanted != s.registered {
            s.registered = wanted
            loop.setInterest(fd, id: s.id, interest: wanted)
        }
    }

    // MARK: Loop thread

    func handleReadiness(_ readiness: Readiness) {
        loop.assertOnLoop()
        if readiness.writable || readiness.failed {
            if flush(gatheringEnds: false) { return }
        }
        if readiness.failed && state.withLock({ $0.lifecycle.inputEnded && $0.pending == 0 }) {
            // Hang-up after the end of input: both directions are done, and epoll would keep
            // reporting it, so close now.
            close()
            return
        }
        if readiness.readable || readiness.failed {
            readAvailable()
        }
    }

    private func readAvailable() {
        state.withLock { $0.gathering = true }
        readBurst()
        // Write what the delegate queued during the burst, in one go.
        _ = flush(gatheringEnds: true)
    }

    /// Writes what the socket takes, resumes writers with room, and closes when the queue is flushed
    /// after a close request or the socket broke (telling the delegate). Returns whether it closed.
    /// - Parameter gatheringEnds: a read burst ends: stop gathering, and flush only if the socket is not
    ///   already waiting for write readiness.
    private func flush(gatheringEnds: Bool) -> Bool {
        var resume: [CheckedContinuation<Void, Never>] = []
        var closeNow = false
        state.withLock { s in
            if gatheringEnds {
                s.gathering = false
                if s.registered.contains(.write) { return }
            }
            guard !s.lifecycle.isClosed else { return }
            (resume, closeNow) = flushLocked(&s)
        }
        for waiter in resume { waiter.resume() }
        guard closeNow else { return false }
        if case .failed(let code) = state.withLock({ $0.lifecycle.state }) {
            delegate?.channelEnded(errno: code)
        }
        close()
        return true
    }

    private func readBurst() {
        let buffer = loop.readBuffer
        // Set before the channel is registered or by `startSecurity` on this thread: stable for the burst.
        let security = state.withLock { $0.security }
        for _ in 0..<8 {
            guard let delegate else { return }
            var asked = 0
            // Through a security layer, bytes are ciphertext: they go through the shared buffer.
            let direct = security != nil ? nil : delegate.channelReadDirectly { [fd] space in
                // No bigger than a shared-buffer read, so one read's work on the loop stays bounded.
                let capped = UnsafeMutableRawBufferPointer(rebasing: space.prefix(buffer.count))
                asked = capped.count
                return Socket.read(fd, into: capped)
            }
            switch direct ?? Socket.read(fd, into: buffer) {
            case .wouldBlock:
                return
            case .done(0):
                if endInput(.inputEnded) { self.delegate?.channelEnded(errno: nil) }
                return
            case .done(let n):
                if direct == nil {
                    asked = buffer.count
                    if let security {
                        if !readSecured(security, buffer, count: n) { return }
                    } else {
                        delegate.channelRead(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                    }
                }
                if n < asked { return }
                // Echoes of what was read wait for the burst to end: once a burst's worth is queued, end
                // it so they go out now (the socket stays readable, so the loop comes back at once).
                if !state.withLock({ $0.lifecycle.isReading && $0.pending < Self.burstWriteLimit }) { return }
            case .failed(let code):
                if endInput(.readFailed(errno: code)) { self.delegate?.channelEnded(errno: code) }
                return
            }
        }
    }

    /// Hands `count` bytes of ciphertext in `buffer` to the security layer and the plaintext it yields
    /// to the delegate (decrypted into the same buffer, one piece at a time); queues what the layer
    /// answers (handshake, alerts). Returns whether reading goes on.
    private func readSecured(_ security: any ChannelSecurity, _ buffer: UnsafeMutableRawBufferPointer, count: Int) -> Bool {
        var fed = false
        while let delegate {
            let step = state.withLock { s -> ChannelSecurityRead in
                if !fed {
                    fed = true
                    guard security.receive(UnsafeRawBufferPointer(rebasing: buffer[..<count])) else { return .failed }
                }
                // Writes made before the handshake finished go out with the burst's flush, encrypted.
                let step = security.read(into: buffer)
                security.takeOutput(into: &s.out)
                return step
            }
            switch step {
            case .plaintext(let n):
                delegate.channelRead(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            case .needMore:
                return true
            case .closed:
                if endInput(.inputEnded) { self.delegate?.channelEnded(errno: nil) }
                return false
            case .failed:
                if endInput(.readFailed(errno: EPROTO)) { self.delegate?.channelEnded(errno: EPROTO) }
                return false
            }
        }
        return false
    }

    /// Stops reading after the end of input or a read failure; returns whether to tell the delegate.
    private func endInput(_ event: ChannelLifecycle.Event) -> Bool {
        state.withLock { s in
            guard case .reportEnd = s.lifecycle.handle(event) else { return false }
            updateInterestLocked(&s)
            return true
        }
    }

    /// Closes the socket now (queued bytes are dropped) and tells the delegate. Loop thread only.
    package func close() {
        loop.assertOnLoop()
        let taken = state.withLock { s -> (waiters: [CheckedContinuation<Void, Never>], id: UInt64)? in
            guard s.lifecycle.handle(.close) == .tearDown else { return nil }
            s.registered = []
            let waiters = s.waiters
            s.waiters.removeAll()
            s.out = []
            s.head = 0
            s.held = []
            s.heldPending = 0
            return (waiters, s.id)
        }
        guard let taken else { return }
        if taken.id != 0 { loop.deregister(fd, id: taken.id) }
        Socket.close(fd)
        for waiter in taken.waiters { waiter.resume() }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.channelClosed()
    }

    func loopStopped() {
        close()
    }
}
