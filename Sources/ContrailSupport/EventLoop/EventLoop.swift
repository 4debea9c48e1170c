import Foundation
import Synchronization

/// What a registered descriptor wants to hear about.
struct Interest: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    /// Bytes can be read (or the peer closed).
    static let read = Interest(rawValue: 1)
    /// Bytes can be written.
    static let write = Interest(rawValue: 2)
}

/// What a poller reported for one descriptor.
struct Readiness: Sendable {
    /// Bytes (or end of stream) can be read.
    var readable: Bool
    /// Bytes can be written.
    var writable: Bool
    /// An error or hang-up: reading will tell which.
    var failed: Bool
}

/// Something registered with an `EventLoop`. Called on the loop's thread only.
protocol EventLoopHandler: AnyObject {
    /// The descriptor is ready.
    func handleReadiness(_ readiness: Readiness)
}

/// A readiness multiplexer: epoll on Linux, poll(2) elsewhere.
protocol Poller: AnyObject, Sendable {
    /// Starts watching `fd`; `id` comes back with its events. Loop thread only.
    func add(_ fd: Int32, id: UInt64, interest: Interest) throws(NetworkError)
    /// Changes what `fd` is watched for. Any thread.
    func modify(_ fd: Int32, id: UInt64, interest: Interest)
    /// Stops watching `fd` (before it is closed). Loop thread only.
    func remove(_ fd: Int32)
    /// Waits up to `timeout` milliseconds (-1: forever) and reports each ready descriptor. Loop thread only.
    func wait(timeout: Int32, _ body: (UInt64, Readiness) -> Void)
    /// Makes a pending or future `wait` return at once. Any thread.
    func wake()
    /// Releases the poller's descriptors.
    func close()
}

/// One thread that serves many sockets: it waits for readiness (epoll on Linux, poll elsewhere),
/// runs timers, and runs work submitted from other threads.
///
/// Sockets, timers and handlers registered with a loop are touched only on its thread, so they need
/// no locks; other threads hand work over with `execute(_:)`.
///
/// ```swift
/// let loop = EventLoop.shared
/// loop.execute { print("on the loop thread") }
/// ```
///
/// `@unchecked Sendable` invariant: `handlers`, `nextID` and `timers` are touched only by the thread that
/// owns the loop (`assertOnLoop`, checked in debug builds): the loop thread while it runs; once it has
/// finished, late work runs on the submitting thread one at a time under `afterlife`, which the loop
/// thread held while finishing, so each owner's accesses happen after the previous owner's. `pending`
/// and `finished` are locks, `owner` is atomic, the rest is constant after `init`.
public final class EventLoop: @unchecked Sendable {
    /// Which readiness API a loop uses.
    public enum Backend: Sendable {
        /// Linux `epoll` (the default on Linux).
        case epoll
        /// Portable `poll(2)` (the default elsewhere; usable on Linux too, e.g. in tests).
        case poll
    }

    /// The first loop of `EventLoopGroup.shared`. Started on first use; never stopped.
    public static var shared: EventLoop { EventLoopGroup.shared.loops[0] }

    /// A poll loop, or a loop that reports nothing if the system cannot make any poller: only for
    /// `EventLoopGroup.shared` when creating its loops failed.
    static var fallback: EventLoop { EventLoop(fallbackName: "contrail.fallback") }

    let poller: any Poller
    private let pending = SanitizerVisibleMutex(PendingWork())
    /// A closure handed to the loop thread. `@unchecked Sendable` invariant: only the loop's owner
    /// (see above) runs it, once.
    private struct Work: @unchecked Sendable {
        let body: () -> Void
    }
    private struct PendingWork {
        var tasks: [Work] = []
        var wakeRequested = false
        var stopping = false
        /// The thread has exited: work is run by the caller instead (serialized by `afterlife`).
        var finished = false
    }
    /// Serializes work submitted after the loop thread has exited (it may re-enter, hence recursive).
    private let afterlife = NSRecursiveLock()

    // Loop-thread state.
    private var handlers: [UInt64: any EventLoopHandler] = [:]
    private var nextID: UInt64 = 1
    private var timers = TimerHeap()
    private var thread: Thread?
    private let finished = SanitizerVisibleMutex<[CheckedContinuation<Void, Never>]?>([])
    /// A reusable read buffer: every socket on this loop reads into it, so no read allocates.
    let readBuffer: UnsafeMutableRawBufferPointer

    /// Starts a loop on a new thread.
    /// - Parameter backend: `.epoll` (Linux only) or `.poll`; nil picks the platform default.
    public init(name: String = "contrail.eventloop", backend: Backend? = nil) throws(NetworkError) {
        let chosen = backend ?? Self.defaultBackend
        switch chosen {
        case .epoll:
            poller = try Platform.makeEpollPoller()
        case .poll:
            poller = try PollPoller()
        }
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        start(name: name)
    }

    private init(fallbackName: String) {
        // Only used if the shared loop's poller could not be created: a poll loop with no descriptors yet.
        poller = (try? PollPoller()) ?? DeadPoller()
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        start(name: fallbackName)
    }

    deinit {
        // The poller's descriptors live as long as the loop object, so a late `wake()` or `modify()`
        // from another thread never touches a descriptor number that was reused.
        poller.close()
        readBuffer.deallocate()
    }

    /// The platform's usual backend: epoll on Linux, poll elsewhere.
    public static var defaultBackend: Backend {
        Platform.defaultEventLoopBackend
    }

    /// The thread that owns the loop's state now: the loop thread while it runs, then whichever thread
    /// holds `afterlife` (0: none). Read by `assertOnLoop` in debug builds.
    private let owner = Atomic<UInt>(0)

    private static var currentThreadID: UInt {
        Platform.currentThreadID
    }

    /// Whether the caller may touch this loop's state: it is on the loop thread, or the loop has finished
    /// and the caller runs late work under `afterlife`.
    package var isOnLoop: Bool { owner.load(ordering: .relaxed) == Self.currentThreadID }

    /// Traps in debug builds unless called where loop-only state may be touched (`isOnLoop`).
    @inline(__always)
    package func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(isOnLoop, "loop-only state touched off its event loop thread", file: file, line: line)
    }

    private func start(name: String) {
        let thread = Thread { [self] in self.run() }
        thread.name = name
        self.thread = thread
        thread.start()
    }

    /// Runs `work` on the loop thread soon. Safe from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(work)
    }

    /// Like `execute`, for work that is only ever handed to the loop (not `Sendable`-checked).
    package func enqueue(_ work: @escaping () -> Void) {
        let wake = pending.withLock { state -> Bool? in
            if state.finished { return nil }
            state.tasks.append(Work(body: work))
            if state.wakeRequested { return false }
            state.wakeRequested = true
            return true
        }
        guard let wake else {
            // The loop has stopped: run the work here so that closes and their waiters still complete.
            afterlife.lock()
            let previous = owner.exchange(Self.currentThreadID, ordering: .relaxed)
            work()
            owner.store(previous, ordering: .relaxed)
            afterlife.unlock()
            return
        }
        if wake { poller.wake() }
    }

    /// Runs `work` on the loop thread and returns its result.
    package func submit<T: Sendable>(_ work: @escaping () -> T) async -> T {
        await withCheckedContinuation { continuation in
            enqueue { continuation.resume(returning: work()) }
        }
    }

    /// Stops the loop after the work already submitted; returns once its thread has finished.
    /// Descriptors still registered are not closed: their owners close them first.
    public func stop() async {
        let wake = pending.withLock { state -> Bool in
            state.stopping = true
            if state.wakeRequested { return false }
            state.wakeRequested = true
            return true
        }
        if wake { poller.wake() }
        await withCheckedContinuation { continuation in
            let done = finished.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters?.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: Loop-thread API

    /// Registers `fd` with `handler`; returns the registration id. Loop thread only.
    func register(_ fd: Int32, interest: Interest, handler: any EventLoopHandler) throws(NetworkError) -> UInt64 {
        assertOnLoop()
        if pending.withLock({ $0.finished }) { throw .closed("the event loop has stopped") }
        let id = nextID
        nextID += 1
        try poller.add(fd, id: id, interest: interest)
        handlers[id] = handler
        return id
    }

    /// Changes the interest of a registered descriptor. Any thread.
    func setInterest(_ fd: Int32, id: UInt64, interest: Interest) {
        poller.modify(fd, id: id, interest: interest)
    }

    /// Forgets a registration; call before closing the descriptor. Loop thread only.
    func deregister(_ fd: Int32, id: UInt64) {
        assertOnLoop()
        if handlers.removeValue(forKey: id) != nil {
            poller.remove(fd)
        }
    }

    /// Runs `body` on the loop thread after `delay`. Loop thread only.
    @discardableResult
    package func schedule(after delay: Duration, _ body: @escaping () -> Void) -> LoopTimer {
        assertOnLoop()
        let timer = LoopTimer(deadline: .now + delay, body: body)
        timers.push(timer)
        return timer
    }

    private func run() {
        owner.store(Self.currentThreadID, ordering: .relaxed)
        while true {
            let (tasks, stopping) = pending.withLock { state -> ([Work], Bool) in
                state.wakeRequested = false
                let tasks = state.tasks
                state.tasks.removeAll(keepingCapacity: true)
                return (tasks, state.stopping)
            }
            for task in tasks { task.body() }
            if stopping && tasks.isEmpty { break }
            runDueTimers()
            let timeout: Int32
            if stopping {
                timeout = 0
            } else if let deadline = timers.nextDeadline() {
                let left = deadline - .now
                let ms = (Double(left.components.seconds) * 1000) + Double(left.components.attoseconds) / 1e15
                timeout = ms <= 0 ? 0 : Int32(min(ms.rounded(.up), 60_000))
            } else {
                timeout = -1
            }
            poller.wait(timeout: timeout) { id, readiness in
                handlers[id]?.handleReadiness(readiness)
            }
        }
        handlers.removeAll()
        timers = TimerHeap()
        afterlife.lock()
        let leftover = pending.withLock { state -> [Work] in
            state.finished = true
            let tasks = state.tasks
            state.tasks = []
            return tasks
        }
        for task in leftover { task.body() }
        // From now on late work runs on the thread that submits it, one at a time under `afterlife`.
        owner.store(0, ordering: .relaxed)
        afterlife.unlock()
        let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            let list = waiters ?? []
            waiters = nil
            return list
        }
        for waiter in waiters { waiter.resume() }
    }

    private func runDueTimers() {
        let now = ContinuousClock.now
        while let timer = timers.popDue(now: now) {
            if let body = timer.body {
                timer.body = nil
                body()
            }
        }
    }
}

/// A one-shot timer on an `EventLoop`; create and cancel it on the loop thread.
package final class LoopTimer {
    let deadline: ContinuousClock.Instant
    /// Dropped on cancel, so a cancelled timer waiting in the heap does not keep its captures alive.
    fileprivate var body: (() -> Void)?
    var isCancelled: Bool { body == nil }

    init(deadline: ContinuousClock.Instant, body: @escaping () -> Void) {
        self.deadline = deadline
        self.body = body
    }

    /// Stops the timer from firing (no effect once it fired).
    package func cancel() { body = nil }
}

/// A binary min-heap of timers by deadline; cancelled timers are dropped when they surface.
struct TimerHeap {
    private var items: [LoopTimer] = []

    mutating func nextDeadline() -> ContinuousClock.Instant? {
        while let first = items.first, first.isCancelled { _ = popFirst() }
        return items.first?.deadline
    }

    mutating func push(_ timer: LoopTimer) {
        items.append(timer)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popDue(now: ContinuousClock.Instant) -> LoopTimer? {
        guard let first = items.first, first.isCancelled || first.deadline <= now else { return nil }
        return popFirst()
    }

    private mutating func popFirst() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count, items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}

/// A poller that never reports anything (only if the system refuses to create any poller).
/// `@unchecked Sendable` invariant: it has no state.
private final class DeadPoller: Poller, @unchecked Sendable {
    func add(_ fd: Int32, id: UInt64, interest: Interest) throws(NetworkError) {
        throw .io(errno: 0, "creating an event poller")
    }
    func modify(_ fd: Int32, id: UInt64, interest: Interest) {}
    func remove(_ fd: Int32) {}
    func wait(timeout: Int32, _ body: (UInt64, Readiness) -> Void) {
        usleep(timeout < 0 ? 100_000 : UInt32(min(timeout, 100)) * 1000)
    }
    func wake() {}
    func close() {}
}
