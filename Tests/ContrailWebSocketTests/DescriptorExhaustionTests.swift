import ContrailTestSupport
import Foundation
import Testing
@testable import ContrailSupport
@testable import ContrailWebSocket


/// The environment variable that turns this test runner into the child below, with this descriptor limit.
private let childLimitVariable = "CONTRAIL_DESCRIPTOR_CHILD_LIMIT"

/// A server running out of descriptors keeps serving, pauses accepting, logs once, and recovers.
/// The descriptor limit is lowered in a child process (this test runner, re-executed), never in the runner.
@Suite("Descriptor exhaustion")
struct DescriptorExhaustionTests {
    @Test("out of descriptors: open connections are served, accepting pauses and resumes, one log line per episode")
    func serverSurvivesDescriptorExhaustion() async throws {
        let runner = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe")
        let child = try ChildProcess(runner, ["--testing-library", "swift-testing", "--filter", "DescriptorExhaustionChild"],
                                     environment: [childLimitVariable: "128"])
        let serverPort = try await child.port(after: "LISTENING ", terminator: { $0 == "\n" })

        let first = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(serverPort)/")
        var echoes = first.messages.makeAsyncIterator()
        try await first.send(.text("before"))
        #expect(try await withTimeout { try await echoes.next() } == .text("before"))

        // Far more clients than the child has descriptors for.
        var raw: [TCPConnection] = []
        for _ in 0..<200 {
            raw.append(try await TCPConnection.connect(host: "127.0.0.1", port: serverPort))
        }
        // Generous: 200 connects to a child under ThreadSanitizer on a loaded machine took over 20 s once.
        try #require(await child.waitForOutput(containing: "pausing accepts", timeout: .seconds(60)), "\(child.text)")
        // The open connection is still served while accepting is paused.
        try await first.send(.text("during"))
        #expect(try await withTimeout { try await echoes.next() } == .text("during"))

        for connection in raw { await connection.close() }
        // Descriptors come back: the server accepts and closes the abandoned connections, and after a quiet
        // period says so. Only then does a new client connect: one that came earlier could land in the
        // reserve, be refused (as documented) and start a second episode, which is not what this checks.
        try #require(await child.waitForOutput(containing: "accepting connections again"), "\(child.text)")
        let late = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(serverPort)/")
        var lateEchoes = late.messages.makeAsyncIterator()
        try await late.send(.text("after"))
        #expect(try await withTimeout { try await lateEchoes.next() } == .text("after"))
        await late.close()
        await first.close()

        child.closeInput()
        #expect(await child.waitForExit())
        let log = child.text
        // One line when an episode starts and one when it ends (a second of accepting without running
        // out), not one per refused accept or per back-off (200 clients here). The late client can start
        // a second episode when it arrives while the abandoned connections' descriptors are still being
        // given back (seen under ThreadSanitizer, which slows the child down).
        let pauses = log.components(separatedBy: "pausing accepts").count - 1
        let resumes = log.components(separatedBy: "accepting connections again").count - 1
        #expect((1...2).contains(pauses) && (1...pauses).contains(resumes), "one log line per episode start and end: \(log)")
        #expect(child.termination == .exited(0), "child stdout/stderr: \(log)")
    }
}

/// Runs only in the child process started above: serves echo with a low descriptor limit until stdin closes.
@Suite("Descriptor exhaustion child", .enabled(if: ProcessInfo.processInfo.environment[childLimitVariable] != nil))
struct DescriptorExhaustionChild {
    @Test func serveWithFewDescriptors() async throws {
        let limit = try #require(ProcessInfo.processInfo.environment[childLimitVariable].flatMap { rlim_t($0) })
        var value = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &value) == 0)
        value.rlim_cur = limit
        #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &value) == 0)
        // Real time: the listener's back-off and quiet period run on the clock while the parent waits.
        let (server, port) = try await startEchoServer(realTime: true)
        FileHandle.standardOutput.write(Data("LISTENING \(port)\n".utf8))
        // The parent closes stdin when done; a dedicated thread waits for it (not the cooperative pool).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                done.resume()
            }.start()
        }
        await server.stop()
    }
}
