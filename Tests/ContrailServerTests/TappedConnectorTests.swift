import Contrail
import ContrailTestSupport
import ContrailWebSocket
import Testing

/// `TappedConnector`: its tap sees every frame both ways, in order, and a frame it refuses does
/// not go on; the frames it passes arrive unchanged.
@Suite struct TappedConnectorTests {
    /// A connector handing out one end of an in-memory pair (the test holds the other).
    struct PairEnd: SyncConnector {
        let transport: InMemoryTransport
        func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport { transport }
    }

    @Test func theTapSeesEveryFrameAndDropsWhatItRefuses() async throws {
        let (near, far) = InMemoryTransport.pair()
        let seen = SanitizerVisibleMutex<[String]>([])
        let connector = TappedConnector(base: PairEnd(transport: near)) { frame, direction in
            seen.withLock { $0.append("\(direction == .sent ? "sent" : "received") \(frame)") }
            return !frame.hasPrefix("drop")
        }
        let transport = try await connector.connect(headers: [])
        var farFrames = far.frames.makeAsyncIterator()
        var nearFrames = transport.frames.makeAsyncIterator()

        try await transport.send("drop me")
        try await transport.send("keep me")  // the control: a frame the tap passes
        #expect(try await farFrames.next() == "keep me", "the dropped frame never left")

        try await far.send("drop this")
        try await far.send("deliver this")
        #expect(try await nearFrames.next() == "deliver this", "the dropped frame never arrived")

        #expect(seen.withLock { $0 } == ["sent drop me", "sent keep me", "received drop this", "received deliver this"])
        await transport.close(code: 1000, reason: "")
        #expect(try await nearFrames.next() == nil, "the end of the base's frames ends the tapped ones")
    }
}
