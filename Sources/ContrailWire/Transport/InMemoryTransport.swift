import ContrailSupport

/// One end of an in-process transport pair: what one end sends, the other receives, in order.
///
/// ```swift
/// let (client, server) = InMemoryTransport.pair()
/// ```
public final class InMemoryTransport: SyncTransport {
    /// The frames the other end sent (unbounded buffer: the sender never waits).
    public let frames: TypedAsyncStream<String, TransportClosed>
    private let continuation: TypedAsyncStream<String, TransportClosed>.Continuation
    private let state = SanitizerVisibleMutex<State>(State())

    private struct State {
        weak var peer: InMemoryTransport?
        var isClosed = false
    }

    private init() {
        (frames, continuation) = TypedAsyncStream.makeStream()
    }

    /// Two connected ends.
    public static func pair() -> (InMemoryTransport, InMemoryTransport) {
        let a = InMemoryTransport(), b = InMemoryTransport()
        a.state.withLock { $0.peer = b }
        b.state.withLock { $0.peer = a }
        return (a, b)
    }

    /// Hands `frame` to the other end; throws once either end is closed.
    public func send(_ frame: String) async throws(TransportClosed) {
        let peer = try state.withLock { state throws(TransportClosed) -> InMemoryTransport? in
            if state.isClosed { throw TransportClosed(code: nil, reason: "transport is closed") }
            return state.peer
        }
        guard let peer else { throw TransportClosed(code: nil, reason: "peer is gone") }
        peer.receive(frame)
    }

    private func receive(_ frame: String) {
        continuation.yield(frame)
    }

    /// Closes both ends: the other end's frames end, with `TransportClosed` unless `code` is 1000.
    public func close(code: UInt16, reason: String) async {
        let peer = state.withLock { state -> InMemoryTransport? in
            guard !state.isClosed else { return nil }
            state.isClosed = true
            return state.peer
        }
        continuation.finish()
        peer?.closedByPeer(code: code, reason: reason)
    }

    private func closedByPeer(code: UInt16, reason: String) {
        state.withLock { $0.isClosed = true }
        if code == 1000 {
            continuation.finish()
        } else {
            continuation.finish(throwing: TransportClosed(code: code, reason: reason))
        }
    }
}
