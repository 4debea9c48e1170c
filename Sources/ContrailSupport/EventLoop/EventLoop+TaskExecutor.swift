/// An event loop is a task executor (SE-0417): a task that prefers it runs its nonisolated code,
/// and the methods of the default actors it calls, on the loop's thread, between the loop's socket
/// events. A connection's task that prefers its own loop handles what the loop has just read
/// without a thread hop: no pool thread woken per burst of frames, and what it writes to other
/// sockets leaves from the loop thread.
///
/// Jobs run in the order they were enqueued, after the work already submitted (``execute(_:)``),
/// once the current socket events are handled: never inside a delegate's callback. Work for a
/// task that prefers a loop must not block: it holds up every connection of the loop.
extension EventLoop: TaskExecutor {
    /// Runs `job` on the loop thread. A loop that has stopped hands it to the global concurrent
    /// executor instead, so no task waits forever for a loop that will not run it.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        do {
            try enqueue(job: job)
        } catch {
            globalConcurrentExecutor.enqueue(job)
        }
    }
}
