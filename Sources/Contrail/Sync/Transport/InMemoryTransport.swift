import Synchronization

/// One end of an in-process transport pair: what one end sends, the other receives, in order.
///
/// ```swift
/// let (client, server) = InMemoryTransport.pair()
/// ```
public final class InMemoryTransport: SyncTransport {
    public let frames: AsyncThrowingStream<String, any Error>
    private let continuation: AsyncThrowingStream<String, any Error>.Continuation
    private let state = Mutex<State>(State())

    private struct State {
        weak var peer: InMemoryTransport?
        var isClosed = false
    }

    private init() {
        (frames, continuation) = AsyncThrowingStream.makeStream(of: String.self, throwing: (any Error).self)
    }

    /// Two connected ends.
    public static func pair() -> (InMemoryTransport, InMemoryTransport) {
        let a = InMemoryTransport(), b = InMemoryTransport()
        a.state.withLock { $0.peer = b }
        b.state.withLock { $0.peer = a }
        return (a, b)
    }

    public func send(_ frame: String) async throws {
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
