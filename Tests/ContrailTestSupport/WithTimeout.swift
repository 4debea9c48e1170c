import ContrailSupport

/// Runs `body` in the current task, cancelling it and throwing `TestFailure` if it takes longer
/// than `bound` of real time: a bound on a wait, not a delay (a passing test never waits for it).
/// `body` must end when its task is cancelled.
///
/// ```swift
/// let reply = try await withTimeout(.seconds(10)) { try await connection.receive() }
/// ```
@discardableResult
public func withTimeout<T>(_ bound: Duration, isolation: isolated (any Actor)? = #isolation,
                           _ body: () async throws -> T) async throws -> T {
    let fired = SanitizerVisibleMutex(false)
    let current = withUnsafeCurrentTask { TaskBox(task: $0) }
    // Not detached: the watchdog inherits the test's task-local values, so Swift Testing sees the
    // cancellation come from the test's own context.
    let watchdog = Task {
        guard (try? await Task.sleep(for: bound)) != nil else { return }
        fired.withLock { $0 = true }
        current.task?.cancel()
    }
    defer { watchdog.cancel() }
    let failure = TestFailure("the awaited event did not happen within \(bound)")
    do {
        let result = try await body()
        if fired.withLock({ $0 }) { throw failure }
        return result
    } catch {
        if fired.withLock({ $0 }) { throw failure }
        throw error
    }
}

/// `withTimeout` with its bound in seconds.
@discardableResult
public func withTimeout<T>(_ seconds: Double = 10, isolation: isolated (any Actor)? = #isolation,
                           _ body: () async throws -> T) async throws -> T {
    try await withTimeout(.nanoseconds(Int64(seconds * 1e9)), isolation: isolation, body)
}

/// Lets the watchdog cancel the task it guards. `@unchecked Sendable`: the task outlives the
/// watchdog (`withTimeout` cancels the watchdog before it returns), and `UnsafeCurrentTask.cancel()`
/// may be called from any thread.
private struct TaskBox: @unchecked Sendable {
    let task: UnsafeCurrentTask?
}
