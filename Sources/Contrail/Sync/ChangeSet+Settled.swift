extension ChangeSet {
    /// Returns once the change set is settled, like `settled()`, but gives up with
    /// `SyncError.timedOut` after `timeout` (nil: no deadline) and with `.cancelled` when the
    /// calling task is cancelled. The deadline runs on `clock` (a client's `ClientOptions.clock`
    /// in tests that run on virtual time).
    public func settled(timeout: Duration?, clock: any Clock<Duration> = ContinuousClock()) async throws(SyncError) -> State {
        if isSettled { return state }
        let waiter = ReplyWaiter<State>()
        onStateChange(waiter) { [weak waiter] state in
            if state != .syncing { waiter?.resolve(.success(state)) }
        }
        return try await waiter.wait(timeout: timeout, clock: clock).get()
    }
}
