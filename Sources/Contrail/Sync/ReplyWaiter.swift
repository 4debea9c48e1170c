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

    /// The result, or `.timedOut` for this caller once `timeout` has passed (the waiter itself
    /// stays unresolved for the others).
    func wait(timeout: Duration?) async -> Result<Value, SyncError> {
        if let result { return result }
        nextWaiter += 1
        let id = nextWaiter
        var timer: Task<Void, Never>?
        if let timeout {
            timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { self?.expire(id) }
            }
        }
        defer { timer?.cancel() }
        return await withCheckedContinuation { continuation in
            if let result { continuation.resume(returning: result) } else { waiters[id] = continuation }
        }
    }

    private func expire(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(returning: .failure(.timedOut))
    }
}
