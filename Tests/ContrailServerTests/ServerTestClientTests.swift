import ContrailServer
import ContrailTestSupport
import Testing

/// The raw test client itself: a missing message fails a test in time, and no frame is lost to a timeout.
@Suite("Server test client")
struct ServerTestClientTests {
    @Test func aTimeoutFailsAtOnceAndTheLateFrameIsStillRead() async throws {
        let server = try ContrailServer(options: Wire.options())
        let client = ServerTestClient(server: server)
        // Nothing was sent, so nothing comes: the wait must end with TestTimeout, not hang.
        await #expect(throws: TestTimeout.self) {
            try await withTimeout(60) { try await client.nextFrame(timeout: .milliseconds(20)) }
        }
        // Control: the read that timed out is still pending; the reply it gets is not lost.
        try await client.createSession()
        await server.stop()
    }
}
