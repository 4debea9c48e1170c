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
    /// The loop has stopped while this was still registered: close (or fail) now, as for any close,
    /// and deregister. The loop refuses work from here on.
    func loopStopped()
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
/// try loop.execute { print("on the loop thread") }
/// ```
///
/// Lifecycle (`EventLoopLifecycle`): running → stopping (`stop()`; work already submitted, and work
/// submitted meanwhile, still runs) → stopped. A stopped loop closes every descriptor still registered
/// with it (their owners hear it as any close), drops its timers, and refuses work from then on:
/// `execute` and `submit` throw `EventLoopError.stopped`, and the work never runs.
///
/// Time: timers follow the loop's clock (`init(name:backend:clock:)`). With the default
/// `ContinuousClock` the loop's epoll/poll wait ends at the nearest deadline; with any other clock (a
/// test's virtual clock) each timer has a task sleeping on that clock that wakes the loop when the
/// clock reaches the timer's deadline.
///
/// `@unchecked Sendable` invariant: `handlers`, `nextID`, `timers`, `idleWork` and `idlePasses` are
/// touched only on the loop thread (`assertOnLoop`, checked in debug builds), which owns them from its
/// start until it has finished stopping. `pending` and `finished` are locks, `owner` is atomic, the rest is constant
/// after `init`.
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
    /// The clock the loop's timers follow.
    let clock: ElapsedClock
    private let pending = SanitizerVisibleMutex(PendingWork())
    /// Work handed to the loop thread. `@unchecked Sendable` invariant: only the loop thread runs
    /// it, once.
    private enum Work: @unchecked Sendable {
        /// A closure (``execute(_:)``, ``enqueue(_:)``).
        case closure(() -> Void)
        /// A job of a task that prefers this loop as its executor (`EventLoop+TaskExecutor.swift`).
        case job(UnownedJob)
    }
    private struct PendingWork {
        var tasks: [Work] = []
        /// A wake-up is on its way to the poller: later submissions need not send another.
        var wakeRequested = false
        var lifecycle = EventLoopLifecycle()
    }

    // Loop-thread state.
    /// Work waiting for the loop to go idle (``whenIdle(_:)``), and the busy passes it has waited.
    private var idleWork: [() -> Void] = []
    private var idlePasses = 0
    private var handlers: [UInt64: any EventLoopHandler] = [:]
    private var nextID: UInt64 = 1
    private var timers = TimerHeap()
    private var thread: Thread?
    private let finished = SanitizerVisibleMutex<[CheckedContinuation<Void, Never>]?>([])
    /// A reusable read buffer: every socket on this loop reads into it, so no read allocates.
    let readBuffer: UnsafeMutableRawBufferPointer

    /// Starts a loop on a new thread.
    /// - Parameters:
    ///   - backend: `.epoll` (Linux only) or `.poll`; nil picks the platform default.
    ///   - clock: the clock its timers (handshake, close, keep-alive and connect timeouts) follow: a test
    ///     passes a virtual clock to run them in virtual time.
    public init(name: String = "contrail-loop", backend: Backend? = nil,
                clock: any Clock<Duration> = ContinuousClock()) throws(NetworkError)
    {
        let chosen = backend ?? Self.defaultBackend
        switch chosen {
        case .epoll:
            poller = try Platform.makeEpollPoller()
        case .poll:
            poller = try PollPoller()
        }
        self.clock = ElapsedClock(clock)
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        start(name: name)
    }

    private init(fallbackName: String) {
        // Only used if the shared loop's poller could not be created: a poll loop with no descriptors yet.
        poller = (try? PollPoller()) ?? DeadPoller()
        clock = ElapsedClock(ContinuousClock())
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

    /// The loop thread while it runs (0 before it starts and once it has finished). Read by
    /// `assertOnLoop` in debug builds.
    private let owner = Atomic<UInt>(0)

    private static var currentThreadID: UInt {
        Platform.currentThreadID
    }

    /// Whether the caller is on the loop thread (and may touch the loop's state).
    package var isOnLoop: Bool { owner.load(ordering: .relaxed) == Self.currentThreadID }

    /// Traps in debug builds unless called on the loop thread (`isOnLoop`).
    @inline(__always)
    package func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(isOnLoop, "loop-only state touched off its event loop thread", file: file, line: line)
    }

    private func start(name: String) {
        let thread = Thread.named(name) { [self] in self.run() }
        self.thread = thread
        thread.start()
    }

    /// Where the loop is in its lifecycle (for tests). Any thread.
    var lifecycleState: EventLoopLifecycle.State { pending.withLock { $0.lifecycle.state } }

    /// The time since the loop started, by its clock. Any thread.
    package var now: Duration { clock.elapsed }

    /// Runs `work` on the loop thread soon. Safe from any thread.
    /// - Throws: `EventLoopError.stopped` once the loop has stopped: the work never runs.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(EventLoopError) {
        try enqueue(work)
    }

    /// Like `execute`, for work that is only ever handed to the loop (not `Sendable`-checked).
    /// - Throws: `EventLoopError.stopped` once the loop has stopped: the work never runs.
    package func enqueue(_ work: @escaping () -> Void) throws(EventLoopError) {
        try queue(.closure(work))
    }

    /// Runs `job` on the loop thread soon, as the executor its task prefers. Any thread.
    /// - Throws: `EventLoopError.stopped` once the loop has stopped: the job never runs here.
    func enqueue(job: UnownedJob) throws(EventLoopError) {
        try queue(.job(job))
    }

    private func queue(_ work: Work) throws(EventLoopError) {
        // The loop thread looks at its queue again before it waits: it needs no wake-up.
        let onLoop = isOnLoop
        let wake = pending.withLock { state -> Bool? in
            guard state.lifecycle.handle(.workSubmitted) == .accept else { return nil }
            state.tasks.append(work)
            if onLoop || state.wakeRequested { return false }
            state.wakeRequested = true
            return true
        }
        guard let wake else { throw .stopped }
        if wake { poller.wake() }
    }

    /// Runs `work` on the loop thread and returns its result.
    /// - Throws: `EventLoopError.stopped` once the loop has stopped (after it has finished closing what
    ///   was registered with it): the work never runs.
    package func submit<T: Sendable>(_ work: @escaping () -> T) async throws(EventLoopError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            do throws(EventLoopError) {
                try enqueue { continuation.resume(returning: work()) }
            } catch {
                continuation.resume(returning: nil)
            }
        }
        guard let result else {
            await waitUntilFinished()
            throw .stopped
        }
        return result
    }

    /// Stops the loop after the work already submitted; returns once its thread has finished. What is
    /// still registered is closed then (its owners hear it as any close); later work is refused.
    public func stop() async {
        let wake = pending.withLock { state -> Bool in
            guard state.lifecycle.handle(.stopRequested) == .wake, !state.wakeRequested else { return false }
            state.wakeRequested = true
            return true
        }
        if wake { poller.wake() }
        await waitUntilFinished()
    }

    /// Returns once the loop thread has finished stopping.
    private func waitUntilFinished() async {
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
    /// - Throws: `closed` once the loop has stopped, `io` when the poller refuses the descriptor.
    func register(_ fd: Int32, interest: Interest, handler: any EventLoopHandler) throws(NetworkError) -> UInt64 {
        assertOnLoop()
        if pending.withLock({ $0.lifecycle.state == .stopped }) { throw NetworkError(EventLoopError.stopped) }
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

    /// Runs `body` on the loop thread once `delay` has passed on the loop's clock. Loop thread only.
    @discardableResult
    package func schedule(after delay: Duration, _ body: @escaping () -> Void) -> LoopTimer {
        assertOnLoop()
        let timer = LoopTimer(deadline: clock.elapsed + delay, body: body)
        timers.push(timer)
        if !clock.isContinuous {
            // The poller cannot wait on this clock: a task sleeps on it and wakes the loop, which then
            // fires what is due by the clock's time (`runDueTimers`).
            let deadline = timer.deadline
            timer.sleeper = Task.detached { [self, clock] in
                guard (try? await clock.sleep(until: .init(offset: deadline))) != nil else { return }
                poller.wake()
            }
        }
        return timer
    }

    private func run() {
        owner.store(Self.currentThreadID, ordering: .relaxed)
        while true {
            let (tasks, action, stopping) = pending.withLock { state -> ([Work], EventLoopLifecycle.Action, Bool) in
                state.wakeRequested = false
                let tasks = state.tasks
                state.tasks.removeAll(keepingCapacity: true)
                let action = state.lifecycle.handle(tasks.isEmpty ? .drainedEmpty : .drainedWork, fallback: .exit)
                return (tasks, action, state.lifecycle.state == .stopping)
            }
            if action == .exit { break }
            for task in tasks { run(task) }
            // A task that prefers this loop queues its next job from the loop thread, at each hop to
            // or from an actor: those rounds run now, up to a bound, before the sockets are polled again.
            // The due timers fire before each round, so work submitted after a timer fell due (by a
            // task this pass ran) runs after that timer, as it would in the next pass.
            var rounds = 0
            while true {
                runDueTimers()
                guard rounds < Self.maxWorkRounds, case let more = takeQueuedWork(), !more.isEmpty else { break }
                for task in more { run(task) }
                rounds += 1
            }
            // Work the loop thread submitted meanwhile (it sent no wake-up) runs after this round of events.
            let queued = pending.withLock { !$0.tasks.isEmpty }
            let timeout: Int32
            if stopping || queued {
                timeout = 0
            } else if clock.isContinuous, let deadline = timers.nextDeadline() {
                let left = deadline - clock.elapsed
                let ms = (Double(left.components.seconds) * 1000) + Double(left.components.attoseconds) / 1e15
                timeout = ms <= 0 ? 0 : Int32(min(ms.rounded(.up), 60_000))
            } else {
                // No timer, or timers on an injected clock: their sleeper tasks wake the loop.
                timeout = -1
            }
            if !idleWork.isEmpty {
                if timeout == 0 {
                    // Busy (work queued, or stopping): the idle work waits, a few passes at most.
                    idlePasses += 1
                    if idlePasses >= Self.maxIdlePasses { runIdleWork() }
                } else {
                    // Idle unless a socket event is ready: look without waiting, handle what is found,
                    // and run the idle work once nothing is (or once it has waited long enough).
                    var ready = false
                    poller.wait(timeout: 0) { id, readiness in
                        ready = true
                        handlers[id]?.handleReadiness(readiness)
                    }
                    if ready && idlePasses + 1 < Self.maxIdlePasses { idlePasses += 1 } else { runIdleWork() }
                    continue
                }
            }
            poller.wait(timeout: timeout) { id, readiness in
                handlers[id]?.handleReadiness(readiness)
            }
        }
        runIdleWork()
        // Stopped: work is refused from now on. Close what is still registered, in registration order.
        for id in handlers.keys.sorted() {
            handlers[id]?.loopStopped()
        }
        handlers.removeAll()
        timers.cancelAll()
        owner.store(0, ordering: .relaxed)
        let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            let list = waiters ?? []
            waiters = nil
            return list
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The most rounds of work queued by the work before them that run between two polls of the
    /// sockets: a busy task holds the loop's other sockets back for at most this many of its hops.
    static let maxWorkRounds = 64

    /// Runs `work` on the loop thread once the loop is idle: no work queued and no socket event
    /// ready, just before it would wait for one; at the latest after ``maxIdlePasses`` busy passes of
    /// the loop, or when it stops. Work that can wait for a burst of events to end (a batch of writes)
    /// then covers the whole burst. Loop thread only.
    package func whenIdle(_ work: @escaping () -> Void) {
        assertOnLoop()
        idleWork.append(work)
    }

    /// The most passes (each: the queued work, then the ready socket events) that idle work waits
    /// while the loop stays busy.
    static let maxIdlePasses = 64

    private func runIdleWork() {
        idlePasses = 0
        guard !idleWork.isEmpty else { return }
        let work = idleWork
        idleWork = []
        for body in work { body() }
    }

    /// The work queued since the last drain (none: empty), leaving the lifecycle where it is.
    private func takeQueuedWork() -> [Work] {
        pending.withLock { state -> [Work] in
            guard !state.tasks.isEmpty else { return [] }
            _ = state.lifecycle.handle(.drainedWork)
            defer { state.tasks.removeAll(keepingCapacity: true) }
            return state.tasks
        }
    }

    private func run(_ work: Work) {
        switch work {
        case .closure(let body): body()
        case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    private func runDueTimers() {
        let now = clock.elapsed
        while let timer = timers.popDue(now: now) {
            timer.sleeper?.cancel()
            timer.sleeper = nil
            if let body = timer.body {
                timer.body = nil
                body()
            }
        }
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
