import ContrailTestSupport
import Foundation
import Synchronization
import Testing
@testable import ContrailSupport

/// An actor with no executor of its own (a default actor): its methods run wherever the calling
/// task prefers.
private actor Counter {
    private(set) var value = 0

    /// Adds one and reports whether it ran on `loop`'s thread.
    func increment(on loop: EventLoop) -> Bool {
        value += 1
        return loop.isOnLoop
    }
}

/// An actor that hands a hook's call to ``OffLoopExecutor``, as a server session does.
private actor HookCaller {
    /// Calls `hook` in ``OffLoopExecutor/run(isolation:_:)`` and returns its answer.
    func call(_ hook: @Sendable () async -> Bool) async -> Bool {
        await OffLoopExecutor.run { await hook() }
    }

    /// Calls `hook` with no change of preference.
    func callInPlace(_ hook: @Sendable () async -> Bool) async -> Bool {
        await hook()
    }
}

/// The event loop as a task executor (SE-0417) and its idle work: where a preferring task runs,
/// what the loop's own submissions need, and when idle work runs.
@Suite("EventLoop as a task executor")
struct EventLoopExecutorTests {
    @Test("a task that prefers a loop runs on its thread, and so do the default actors it calls")
    func preferringTaskRunsOnTheLoop() async throws {
        let loop = try EventLoop(name: "test")
        let counter = Counter()
        let (task, actor) = await Task(executorPreference: loop) { () async -> (Bool, Bool) in
            let here = loop.isOnLoop
            let there = await counter.increment(on: loop)
            return (here && loop.isOnLoop, there)
        }.value
        #expect(task)
        #expect(actor)
        // Control: without the preference, neither runs on the loop.
        let (plainTask, plainActor) = await Task.detached { () async -> (Bool, Bool) in
            (loop.isOnLoop, await counter.increment(on: loop))
        }.value
        #expect(!plainTask)
        #expect(!plainActor)
        await loop.stop()
    }

    @Test("what a loop's task awaits in OffLoopExecutor.run runs off the loop, and the task comes back after")
    func offLoopWorkLeavesTheLoop() async throws {
        let loop = try EventLoop(name: "test")
        let counter = Counter()
        let caller = HookCaller()
        let hook: @Sendable () async -> Bool = { loop.isOnLoop }
        let (control, hookInPlace, hookOff, actorOff, back) = await Task(executorPreference: loop) {
            () async -> (Bool, Bool, Bool, Bool, Bool) in
            let control = await counter.increment(on: loop)
            let hookInPlace = await caller.callInPlace(hook)
            let hookOff = await caller.call(hook)
            let actorOff = await OffLoopExecutor.run { await counter.increment(on: loop) }
            return (control, hookInPlace, hookOff, actorOff, loop.isOnLoop)
        }.value
        // Controls: the actor and the hook run on the loop thread when nothing says otherwise.
        #expect(control)
        #expect(hookInPlace)
        // In OffLoopExecutor: the hook the actor awaits, and the idle actor called, run elsewhere.
        #expect(!hookOff)
        #expect(!actorOff)
        // And the task is back on its loop afterwards.
        #expect(back)
        await loop.stop()
    }

    @Test("work the loop thread submits runs without a wake-up, however long the chain")
    func ownSubmissionsRun() async throws {
        let loop = try EventLoop(name: "test")
        // Each item submits the next from the loop thread (as a task's hop to an actor does), more
        // of them than the rounds run between two polls: with no wake-up sent, the loop must still
        // not wait in its poll while work is queued.
        let links = EventLoop.maxWorkRounds * 3
        let ran = Atomic<Int>(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            @Sendable func link(_ left: Int) {
                ran.add(1, ordering: .relaxed)
                if left == 0 { return done.resume() }
                try? loop.execute { link(left - 1) }
            }
            try? loop.execute { link(links) }
        }
        let count = ran.load(ordering: .relaxed)
        #expect(count == links + 1)
        // And a task hopping between the loop and an actor, many times.
        let counter = Counter()
        let onLoop = await Task(executorPreference: loop) { () async -> Bool in
            var all = true
            for _ in 0..<500 { all = await counter.increment(on: loop) && loop.isOnLoop && all }
            return all
        }.value
        #expect(onLoop)
        #expect(await counter.value == 500)
        await loop.stop()
    }

    @Test("a stopped loop hands a preferring task to the global executor: it still runs")
    func stoppedLoopFallsBack() async throws {
        let loop = try EventLoop(name: "test")
        // Control: before the stop, the task runs on the loop.
        #expect(await Task(executorPreference: loop) { loop.isOnLoop }.value)
        await loop.stop()
        let outcome = await Task(executorPreference: loop) { () async -> (Int, Bool) in (42, loop.isOnLoop) }.value
        #expect(outcome == (42, false))
    }

    @Test("idle work runs once nothing is ready: after the work queued before it, before the loop waits")
    func idleWorkRunsWhenIdle() async throws {
        let loop = try EventLoop(name: "test")
        let order = SanitizerVisibleMutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            try? loop.execute {
                loop.whenIdle {
                    order.withLock { $0.append("idle") }
                    done.resume()
                }
                try? loop.execute { order.withLock { $0.append("queued after") } }
                order.withLock { $0.append("submitting") }
            }
        }
        #expect(order.withLock { $0 } == ["submitting", "queued after", "idle"])
        await loop.stop()
    }

    @Test("idle work waits a few passes at most for a loop that stays busy")
    func idleWorkIsNotStarved() async throws {
        let loop = try EventLoop(name: "test")
        let ran = Atomic<Int>(0)
        let ranBeforeIdle = Atomic<Int>(-1)
        let links = 100_000
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            @Sendable func link(_ left: Int) {
                ran.add(1, ordering: .relaxed)
                if left == 0 { return done.resume() }
                try? loop.execute { link(left - 1) }
            }
            try? loop.execute {
                loop.whenIdle { ranBeforeIdle.store(ran.load(ordering: .relaxed), ordering: .relaxed) }
                link(links)
            }
        }
        // The chain keeps work queued all along: the idle work ran while it went on, after at most
        // `maxIdlePasses` passes of `maxWorkRounds` rounds each (plus each pass's first drain).
        let before = ranBeforeIdle.load(ordering: .relaxed)
        #expect(before > 0)
        #expect(before <= EventLoop.maxIdlePasses * (EventLoop.maxWorkRounds + 1) + 1)
        await loop.stop()
    }

    @Test("idle work registered once the loop is stopping still runs before it exits")
    func idleWorkRunsAtStop() async throws {
        let loop = try EventLoop(name: "test")
        let ran = Atomic<Bool>(false)
        let stopAsked = Atomic<Bool>(false)
        let registeredWhileStopping = Atomic<Bool>(false)
        try loop.execute {
            // On the loop thread, wait (bounded) until the test saw stop() asked for, then register
            // the idle work: the loop has only its exit left, with no idle moment before it. The
            // wait reads an atomic, not the loop's state: spinning on the loop's lock could keep
            // stop() from ever taking it.
            let deadline = ContinuousClock.now + .seconds(120)
            while !stopAsked.load(ordering: .acquiring), ContinuousClock.now < deadline { sched_yield() }
            registeredWhileStopping.store(loop.lifecycleState == .stopping, ordering: .relaxed)
            loop.whenIdle { ran.store(true, ordering: .relaxed) }
        }
        let stopping = Task { await loop.stop() }
        #expect(await eventually { loop.lifecycleState == .stopping })
        stopAsked.store(true, ordering: .releasing)
        await stopping.value
        let (whileStopping, didRun) = (registeredWhileStopping.load(ordering: .relaxed), ran.load(ordering: .relaxed))
        #expect(whileStopping, "the idle work came once the loop was stopping")
        #expect(didRun)
    }
}
