import Synchronization

/// Received items waiting for their consumer, with read back-pressure: past `highWater` bytes the
/// producer is told to stop reading the socket, and told to resume once the consumer has taken the
/// queue down to half of that. Either a pulling consumer (`next()`) or a push `Sink` gets the items.
///
/// Its members are inlinable so that each connection type's module gets them specialised for its
/// element (unspecialised, every call looked up generic metadata at run time: 4 % of the server's CPU
/// in the fan-out benchmark). The class is `public` for that alone (its members stay `package`), as
/// ``SanitizerVisibleMutex`` is.
public final class InboundQueue<Element: Sendable, Failure: InboundQueueFailure>: Sendable {
    /// A push consumer: called under the queue's lock, so it must only hand the work on (e.g. `queue.async`).
    public struct Sink: Sendable {
        @usableFromInline var deliver: @Sendable ([Element]) -> Void
        @usableFromInline var end: @Sendable (Failure?) -> Void

        package init(deliver: @escaping @Sendable ([Element]) -> Void, end: @escaping @Sendable (Failure?) -> Void) {
            self.deliver = deliver
            self.end = end
        }
    }

    @usableFromInline struct State {
        @usableFromInline var items: [Element] = []
        @usableFromInline var head = 0
        @usableFromInline var bytes = 0
        @usableFromInline var paused = false
        @usableFromInline var waiter: CheckedContinuation<Result<Element?, Failure>, Never>?
        /// Which `next()` call `waiter` belongs to, so that cancelling another call cannot take it.
        @usableFromInline var waiterToken: UInt64 = 0
        @usableFromInline var lastToken: UInt64 = 0
        @usableFromInline var ended = false
        @usableFromInline var endError: Failure?
        @usableFromInline var sink: Sink?

        @usableFromInline init() {}
    }
    @usableFromInline let state = SanitizerVisibleMutex(State())
    @usableFromInline let highWater: Int
    @usableFromInline let size: @Sendable (Element) -> Int
    @usableFromInline let setReading: @Sendable (Bool) -> Void

    /// - Parameters:
    ///   - size: the byte count an item holds.
    ///   - setReading: called (under the lock: it must not call back into the queue) with false to pause
    ///     reading and true to resume.
    package init(highWater: Int, size: @escaping @Sendable (Element) -> Int, setReading: @escaping @Sendable (Bool) -> Void) {
        self.highWater = max(1, highWater)
        self.size = size
        self.setReading = setReading
    }

    /// Adds received items (producer side).
    @inlinable
    package func push(_ batch: [Element]) {
        guard !batch.isEmpty else { return }
        var wake: (CheckedContinuation<Result<Element?, Failure>, Never>, Element)?
        state.withLock { s in
            if s.ended { return }
            if let sink = s.sink {
                sink.deliver(batch)
                return
            }
            var rest = batch[...]
            if let waiter = s.waiter, let first = rest.first {
                s.waiter = nil
                wake = (waiter, first)
                rest = rest.dropFirst()
            }
            for item in rest {
                s.items.append(item)
                s.bytes += size(item) + 64
            }
            if s.bytes > highWater && !s.paused {
                s.paused = true
                // Under the lock, so a consumer's resume cannot overtake this pause.
                setReading(false)
            }
        }
        if let (waiter, item) = wake { waiter.resume(returning: .success(item)) }
    }

    /// Marks the end: after the queued items the consumer gets nil (clean end) or `error`.
    package func finish(_ error: Failure?) {
        let waiter = state.withLock { s -> CheckedContinuation<Result<Element?, Failure>, Never>? in
            guard !s.ended else { return nil }
            s.ended = true
            s.endError = error
            if let sink = s.sink { sink.end(error) }
            let waiter = s.waiter
            s.waiter = nil
            return waiter
        }
        waiter?.resume(returning: error.map { .failure($0) } ?? .success(nil))
    }

    /// Switches to push delivery: queued items (and the end, if reached) go to `sink` at once, in order.
    package func setSink(_ sink: Sink) {
        state.withLock { s in
            s.sink = sink
            let queued = takeAllLocked(&s)
            if !queued.isEmpty { sink.deliver(queued) }
            if s.ended { sink.end(s.endError) }
            if let waiter = s.waiter {
                s.waiter = nil
                waiter.resume(returning: .success(nil))
            }
        }
    }

    /// The next item; nil after a clean end and when the waiting task is cancelled. Throws the end
    /// error, or `Failure.concurrentConsumer` at once while another task waits.
    @inlinable
    package func next() async throws(Failure) -> Element? {
        if let ready = take() { return try ready.get() }
        let token = state.withLock { s in
            s.lastToken &+= 1
            return s.lastToken
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Element?, Failure>, Never>) in
                let ready = state.withLock { s -> Result<Element?, Failure>? in
                    if let ready = takeLocked(&s) { return ready }
                    if Task.isCancelled { return .success(nil) }
                    // One consumer at a time: a second one fails at once instead of replacing the first.
                    if s.waiter != nil { return .failure(Failure.concurrentConsumer) }
                    s.waiter = continuation
                    s.waiterToken = token
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Result<Element?, Failure>, Never>? in
                guard s.waiterToken == token else { return nil }
                let waiter = s.waiter
                s.waiter = nil
                return waiter
            }
            waiter?.resume(returning: .success(nil))
        }
        return try result.get()
    }

    /// Takes every queued item at once (resuming reading if it was paused), for a consumer switching to
    /// another delivery. O(n).
    @inlinable
    package func takeAll() -> [Element] {
        state.withLock { takeAllLocked(&$0) }
    }

    @inlinable
    func takeAllLocked(_ s: inout State) -> [Element] {
        let queued = Array(s.items[s.head...])
        s.items.removeAll()
        s.head = 0
        s.bytes = 0
        if s.paused {
            s.paused = false
            setReading(true)
        }
        return queued
    }

    /// How many items are queued (for tests).
    @inlinable
    package var queuedCount: Int { state.withLock { $0.items.count - $0.head } }

    /// Whether a consumer is parked in `next()` (for tests).
    @inlinable
    package var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    @inlinable
    func take() -> Result<Element?, Failure>? {
        return state.withLock { s -> Result<Element?, Failure>? in
            takeLocked(&s)
        }
    }

    /// Takes the next item or the end, and restarts reading once the queue is down to half the mark
    /// (under the lock, so a producer's pause cannot overtake it).
    @inlinable
    func takeLocked(_ s: inout State) -> Result<Element?, Failure>? {
        if s.paused && s.bytes <= highWater / 2 {
            s.paused = false
            setReading(true)
        }
        if s.head < s.items.count {
            let item = s.items[s.head]
            s.head += 1
            s.bytes -= size(item) + 64
            if s.head == s.items.count {
                s.items = []   // an idle connection keeps no buffer
                s.head = 0
            } else if s.head >= 1024 && s.head * 2 >= s.items.count {
                s.items.removeSubrange(0..<s.head)
                s.head = 0
            }
            if s.paused && s.bytes <= highWater / 2 {
                s.paused = false
                setReading(true)
            }
            return .success(item)
        }
        if s.ended { return s.endError.map { .failure($0) } ?? .success(nil) }
        return nil
    }
}

/// The error an `InboundQueue` ends with; it needs one for a second consumer.
public protocol InboundQueueFailure: Error, Sendable {
    /// A second consumer asked for the next item while another one was already waiting for it.
    static var concurrentConsumer: Self { get }
}

extension NetworkError: InboundQueueFailure {}
