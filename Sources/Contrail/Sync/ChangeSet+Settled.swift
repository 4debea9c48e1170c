extension ChangeSet {
    /// Returns once the change set is settled, like `settled()`, but gives up with
    /// `SyncError.timedOut` after `timeout` (nil: no deadline) and with `.cancelled` when the
    /// calling task is cancelled.
    public func settled(timeout: Duration?) async throws(SyncError) -> State {
        if isSettled { return state }
        let waiter = ReplyWaiter<State>()
        onStateChange(waiter) { [weak waiter] state in
            if state != .syncing { waiter?.resolve(.success(state)) }
        }
        return try await waiter.wait(timeout: timeout).get()
    }
}
