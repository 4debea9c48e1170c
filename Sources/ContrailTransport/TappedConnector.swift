import ContrailWebSocket
import ContrailWire
import Synchronization

/// A connector whose transports show every frame to a tap on its way: to count bytes, log
/// messages, or, in tests, drop frames as a lossy network would. The tap runs on the task that
/// sends or reads the frame, so it must be quick and must not block.
///
/// ```swift
/// let bytes = Atomic<Int>(0)
/// let connector = TappedConnector(base: WebSocketConnector(url: url)) { frame, _ in
///     bytes.add(frame.utf8.count, ordering: .relaxed)
///     return true
/// }
/// ```
public struct TappedConnector: SyncConnector {
    /// Which way a frame is going.
    public enum Direction: Sendable {
        /// From this client to the server.
        case sent
        /// From the server to this client.
        case received
    }

    /// Sees one frame and says whether it goes on: `false` drops it (a sent frame is not sent, a
    /// received one is not delivered).
    public typealias Tap = @Sendable (_ frame: String, _ direction: Direction) -> Bool

    private let base: any SyncConnector
    private let tap: Tap

    /// Taps the transports `base` opens.
    public init(base: any SyncConnector, tap: @escaping Tap) {
        self.base = base
        self.tap = tap
    }

    /// Opens a transport with `base` and taps it.
    public func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        TappedTransport(base: try await base.connect(headers: headers), tap: tap)
    }
}

/// A transport relaying its base's frames through a tap; frames are pulled from the base one at a
/// time, as the reader asks (no buffer, no task of its own).
private final class TappedTransport: SyncTransport {
    let base: any SyncTransport
    let tap: TappedConnector.Tap
    let frames: TypedAsyncStream<String, TransportClosed>

    init(base: any SyncTransport, tap: @escaping TappedConnector.Tap) {
        self.base = base
        self.tap = tap
        let reader = FrameReader(base.frames.makeAsyncIterator())
        frames = TypedAsyncStream(unfolding: { () async throws(TransportClosed) -> String? in
            while let frame = try await reader.next() {
                if tap(frame, .received) { return frame }
            }
            return nil
        })
    }

    func send(_ frame: String) async throws(TransportClosed) {
        guard tap(frame, .sent) else { return }
        try await base.send(frame)
    }

    func close(code: UInt16, reason: String) async { await base.close(code: code, reason: reason) }
}

/// Holds the base transport's frame iterator for the tapped stream's producer.
///
/// `@unchecked Sendable` invariant: `iterator` is advanced by one `next()` at a time, because the
/// tapped stream's producer runs once per `next()` of its own single consumer (an async iterator
/// is not shared). Debug builds assert it.
private final class FrameReader: @unchecked Sendable {
    private var iterator: TypedAsyncStream<String, TransportClosed>.Iterator
    private let reading = Atomic<Bool>(false)

    init(_ iterator: TypedAsyncStream<String, TransportClosed>.Iterator) { self.iterator = iterator }

    func next() async throws(TransportClosed) -> String? {
        assert(!reading.exchange(true, ordering: .acquiring), "two reads of one transport at once")
        defer { assert(reading.exchange(false, ordering: .releasing)) }
        return try await iterator.next()
    }
}
