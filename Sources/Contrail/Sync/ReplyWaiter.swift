/// A one-shot result that an async caller awaits with a deadline.
@MainActor
final class ReplyWaiter<Value: Sendable> {
    private var continuation: CheckedContinuation<Result<Value, SyncError>, Never>?
    private var result: Result<Value, SyncError>?

    /// Settles the waiter (only the first call counts).
    func resolve(_ result: Result<Value, SyncError>) {
        guard self.result == nil else { return }
        self.result = result
        continuation?.resume(returning: result)
        continuation = nil
    }

    var isResolved: Bool { result != nil }

    /// The result, or `.timedOut` once `timeout` has passed.
    func wait(timeout: Duration?) async -> Result<Value, SyncError> {
        if let result { return result }
        var timer: Task<Void, Never>?
        if let timeout {
            timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { self?.resolve(.failure(.timedOut)) }
            }
        }
        defer { timer?.cancel() }
        return await withCheckedContinuation { continuation in
            if let result { continuation.resume(returning: result) } else { self.continuation = continuation }
        }
    }
}
