import ContrailSupport

/// A fetch's progress as an asynchronous sequence.
extension Session {
    /// Fetches `scope` as ``fetch(_:params:mode:progress:)`` does, and hands its progress out as an
    /// asynchronous sequence: one ``FetchProgress`` per part of the state as it arrives (one for a
    /// state in one message), `received` growing to `total`. The sequence ends when the scope is
    /// usable (its state applied); a fetch that fails ends it with the `SyncError` that `fetch`
    /// throws. The fetch starts at once, whether or not the sequence is iterated; a consumer that
    /// stops early (or whose task is cancelled) stops listening, not the fetch.
    ///
    /// ```swift
    /// for try await progress in session.fetchWithProgress(scope) {
    ///     bar.fraction = progress.fraction
    /// }
    /// // the scope is usable here
    /// ```
    public func fetchWithProgress(_ scope: Scope, params: [String: JSON] = [:], mode: SyncMode = .realtime)
        -> TypedAsyncStream<FetchProgress, SyncError> {
        let (stream, continuation) = TypedAsyncStream<FetchProgress, SyncError>.makeStream()
        Task { @MainActor in
            do throws(SyncError) {
                try await fetch(scope, params: params, mode: mode) { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }
}
