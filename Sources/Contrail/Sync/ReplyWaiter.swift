/// A one-shot result that any number of async callers await, each with its own deadline.
@MainActor
final class ReplyWaiter<Value: Sendable> {
    private var waiters: [Int: CheckedContinuation<Result<Value, SyncError>, Never>] = [:]
    private var nextWaiter = 0
    private var result: Result<Value, SyncError>?

    /// Settles the waiter (only the first call counts) and wakes every caller.
    func resolve(_ result: Result<Value, SyncError>) {
        guard self.result == nil else { return }
        self.result = result
        let waiting = waiters
        waiters.removeAll()
        for continuation in waiting.values { continuation.resume(returning: result) }
    }

    var isResolved: Bool { result != nil }

    /// The result, or `.timedOut` for this caller once `timeout` has passed on `clock`, or
    /// `.cancelled` when the caller's task is cancelled (the waiter itself stays unresolved for the others).
    func wait(timeout: Duration?, clock: any Clock<Duration> = ContinuousClock()) async -> Result<Value, SyncError> {
        if let result { return result }
        nextWaiter += 1
        let id = nextWaiter
        var timer: Task<Void, Never>?
        if let timeout {
            timer = Task { [weak self] in
                guard (try? await clock.sleep(for: timeout)) != nil, !Task.isCancelled else { return }
                self?.expire(id, with: .timedOut)
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if let result {
                    continuation.resume(returning: result)
                } else if Task.isCancelled {
                    continuation.resume(returning: .failure(.cancelled))
                } else {
                    waiters[id] = continuation
                }
            }
        } onCancel: {
            Task { @MainActor [weak self] in self?.expire(id, with: .cancelled) }
        }
    }

    /// Ends one caller's wait with `error` (its deadline passed, or its task was cancelled).
    private func expire(_ id: Int, with error: SyncError = .timedOut) {
        waiters.removeValue(forKey: id)?.resume(returning: .failure(error))
    }
}
