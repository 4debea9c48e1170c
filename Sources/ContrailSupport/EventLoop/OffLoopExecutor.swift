/// The task executor (SE-0417) for work that must not run on an event loop: app-supplied hooks,
/// work proportional to a scope's size or a message's (states, big change sets). A task that
/// prefers its connection's loop wraps such work in ``run(isolation:_:)``: its nonisolated code,
/// and the idle default actors it calls, then run on the cooperative pool, and the loop goes on
/// reading and writing its other sockets meanwhile.
///
/// Preferring `globalConcurrentExecutor` instead would not always do: the runtime counts it as no
/// preference, and a task with none continues in place on the thread it is on at each hop to or
/// from an idle actor, a loop thread when a loop happens to be running that actor. With an executor
/// of its own, every hop of the task from a loop is queued to it. It hands its jobs to the global
/// concurrent executor (not to Dispatch's global queues, whose few threads also resolve host names
/// for every connect: a held hook there once delayed other connections' connects).
package final class OffLoopExecutor: TaskExecutor {
    /// The one instance (it has no state).
    package static let shared = OffLoopExecutor()

    private init() {}

    /// Runs `job` on the cooperative pool.
    package func enqueue(_ job: consuming ExecutorJob) {
        globalConcurrentExecutor.enqueue(job)
    }

    /// Runs `body` preferring this executor, in the caller's isolation: whatever it awaits off that
    /// isolation (a hook, another actor) runs off the event loops, and the caller's task returns to
    /// its own preference afterwards.
    package static func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async -> T) async -> T {
        await withTaskExecutorPreference(shared, isolation: isolation, operation: body)
    }
}
