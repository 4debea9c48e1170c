import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation
import Testing

/// Resend buffers bounded in bytes (issue 8, item 5): a backlog is sent once, in frames within the
/// message limit; a session over its bound is closed with 4097 and a reason its client receives;
/// a slow reader's cost to the server is bounded.
@Suite("Server resend bounds")
struct ServerResendBoundTests {
    @Test func backlogIsSentOnceInFramesWithinTheLimit() async throws {
        var options = Wire.options()
        options.maxMessageBytes = 256 << 10
        options.maxResendBytes = 8 << 20
        let server = try ContrailServer(options: options)
        let (a, tokenB, root) = try await ServerTestClient.oneStaysOneLeaves(server)
        // 40 broadcasts of 32 KiB while B is away: 1.3 MiB, more than five frames' worth.
        let value = JSON.string(String(repeating: "y", count: 32 << 10))
        for n in 1...40 {
            _ = try await a.sync(index: n + 1, fragments: [Wire.fragment("change", root, "Root", ["v": .int(Int64(n)), "big": value])])
        }
        let resumed = ServerTestClient(server: server, headers: [("X-Jetstream-SessionToken", tokenB)])
        try await resumed.send(#"{"type":"Ping","index":0,"ack":2,"resendMissing":true}"#)
        var indices: [Int] = []
        var frames = 0
        while indices.count < 41 {
            guard let frame = try await resumed.nextFrame(timeout: .seconds(30)) else { break }
            frames += 1
            #expect(frame.utf8.count <= options.maxMessageBytes)
            for message in try JSON(parsing: frame).arrayValue ?? [] where message["type"] == "ScopeSync" {
                indices.append(Int(message["index"]?.int64Value ?? 0))
            }
            if indices.count == 40 {
                // Live again: the next broadcast arrives once, after the backlog.
                _ = try await a.sync(index: 42, fragments: [Wire.fragment("change", root, "Root", ["v": 41])])
            }
        }
        #expect(indices == Array(3...43))
        #expect(frames > 5)
        // Nothing else follows (no second copy of the backlog): the next message is the reply to a
        // fetch sent now, which would queue behind a second copy.
        try await resumed.send(#"{"type":"Ping","index":0,"ack":43,"resendMissing":false}"#)
        try await resumed.send(#"{"type":"ScopeFetch","index":2,"name":"Marker","params":{}}"#)
        let next = try await resumed.next()
        #expect(next["type"] == "ScopeFetchReply" && next["replyTo"] == 2, "\(next)")
        await server.stop()
    }

    /// A reader that stops reading: the server keeps at most its resend bound (plus the socket's
    /// write buffer) for it, drops it with 4097, and the reason arrives once the reader reads again.
    @Test func slowReaderIsDroppedWithTheReasonAndBoundedMemory() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-slow-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await ServerProcess(data: directory, arguments: ["--max-resend-bytes", "\(2 << 20)", "--max-message-bytes", "\(1 << 20)"])
        let slow = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(server.port)/")
        var incoming = slow.messages.makeAsyncIterator()
        try await slow.send(.text(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#))
        try await slow.send(.text(#"{"type":"ScopeFetch","index":1,"name":"S","params":{}}"#))
        var sawState = false
        while !sawState, case .text(let text)? = try await incoming.next() {
            sawState = text.contains(#""type":"ScopeState""#)
        }
        let writer = try await ServerTestClient.connect(port: server.port)
        try await writer.createSession()
        let (_, state) = try await writer.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let value = JSON.string(String(repeating: "z", count: 64 << 10))
        func write(_ range: ClosedRange<Int>) async throws {
            for n in range {
                let reply = try await writer.sync(index: n + 1, fragments: [Wire.fragment("change", root, "Root", ["v": .int(Int64(n)), "big": value])])
                #expect(reply["fragmentReplies"] == [[:]])
            }
        }
        try await write(1...20)
        let before = try server.residentBytes
        try await write(21...500)   // 30 MiB of broadcasts the slow reader does not read
        let after = try server.residentBytes
        #expect(after - before < 24 << 20, "the server grew by \((after - before) >> 20) MiB for a slow reader")
        // Reading again: the queued frames, then the close with its reason (bounded: after 60 s
        // we close it ourselves and the expectations below fail).
        let guardTimer = Task {
            try await Task.sleep(for: .seconds(60))
            await slow.close(code: .normal, reason: "test timed out")
        }
        var received = 0
        do {
            while let message = try await incoming.next() {
                if case .text = message { received += 1 }
            }
        } catch {}
        guardTimer.cancel()
        #expect(slow.closeCode?.rawValue == 4097, "closed with \(String(describing: slow.closeCode)): \(slow.closeReason)")
        #expect(slow.closeReason.contains("Resend buffer is full"))
        #expect(received < 100)
        #expect(try await server.logs("Resend buffer is full"))
        try await server.kill()
    }
}
