/// Finishes an `AsyncStream` when it is freed. An observation that feeds a stream captures one in
/// its callback, so the stream ends when that callback goes: when the observed source is freed or
/// when the observation is cancelled.
final class StreamFinisher<Element>: Sendable {
    /// The continuation the observation yields to.
    let continuation: AsyncStream<Element>.Continuation

    init(_ continuation: AsyncStream<Element>.Continuation) {
        self.continuation = continuation
    }

    deinit {
        continuation.finish()
    }
}
