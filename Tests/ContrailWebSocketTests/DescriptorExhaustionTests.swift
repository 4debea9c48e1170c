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
        let child = try ChildProcess(
            executable: "/proc/self/exe",
            arguments: ["--testing-library", "swift-testing", "--filter", "DescriptorExhaustionChild"],
            environment: [childLimitVariable: "128"])
        defer { child.kill() }
        var lines = child.stdoutLines.makeAsyncIterator()
        let port = try await withTimeout(30) { () -> UInt16? in
            while let line = await lines.next() {
                if line.hasPrefix("LISTENING "), let port = UInt16(line.dropFirst(10)) { return port }
            }
            return nil
        }
        let serverPort = try #require(port, "the child printed no port; stderr: \(child.stderrText)")

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
        try await withTimeout(60) { await child.waitForStderr(containing: "pausing accepts") }
        // The open connection is still served while accepting is paused.
        try await first.send(.text("during"))
        #expect(try await withTimeout { try await echoes.next() } == .text("during"))

        for connection in raw { await connection.close() }
        // Descriptors come back: the server accepts and closes the abandoned connections, and after a quiet
        // period says so. Only then does a new client connect: one that came earlier could land in the
        // reserve, be refused (as documented) and start a second episode, which is not what this checks.
        try await withTimeout(30) { await child.waitForStderr(containing: "accepting connections again") }
        let late = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(serverPort)/")
        var lateEchoes = late.messages.makeAsyncIterator()
        try await late.send(.text("after"))
        #expect(try await withTimeout { try await lateEchoes.next() } == .text("after"))
        await late.close()
        await first.close()

        let status = try await withTimeout(30) { await child.finish() }
        let log = child.stderrText
        // One line when an episode starts and one when it ends (a second of accepting without running
        // out), not one per refused accept or per back-off (200 clients here). The late client can start
        // a second episode when it arrives while the abandoned connections' descriptors are still being
        // given back (seen under ThreadSanitizer, which slows the child down).
        let pauses = log.components(separatedBy: "pausing accepts").count - 1
        let resumes = log.components(separatedBy: "accepting connections again").count - 1
        #expect((1...2).contains(pauses) && (1...pauses).contains(resumes), "one log line per episode start and end: \(log)")
        #expect(status == .exited(0), "child stdout/stderr: \(log)")
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

/// A child process with its stdout as a stream of lines and its stderr collected.
final class ChildProcess: Sendable {
    /// How the child ended.
    enum Status: Equatable { case exited(Int32), signalled(Int32) }

    private let process: Process
    private let stdin: Pipe
    /// Lines the child writes to standard output.
    let stdoutLines: AsyncStream<String>
    /// Standard error so far, and the tasks waiting for a text to appear in it.
    private let stderrBuffer =
        SanitizerVisibleMutex<(bytes: [UInt8], waiters: [(String, String, CheckedContinuation<Void, Never>)])>(([], []))
    private let ended: AsyncStream<Status>

    init(executable: String, arguments: [String], environment: [String: String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: executable)) ?? executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        let (lines, lineSink) = AsyncStream.makeStream(of: String.self)
        let (ended, endSink) = AsyncStream.makeStream(of: Status.self)
        process.terminationHandler = { process in
            endSink.yield(process.terminationReason == .exit ? .exited(process.terminationStatus)
                : .signalled(process.terminationStatus))
            endSink.finish()
        }
        stdoutLines = lines
        self.ended = ended
        self.process = process
        stdin = input
        try process.run()
        // Blocking pipe reads run on threads of their own.
        Thread {
            var pending = Data()
            while case let chunk = out.fileHandleForReading.availableData, !chunk.isEmpty {
                pending += chunk
                while let newline = pending.firstIndex(of: 0x0A) {
                    lineSink.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
            }
            lineSink.finish()
        }.start()
        Thread { [self] in
            while case let chunk = err.fileHandleForReading.availableData, !chunk.isEmpty {
                let ready = self.stderrBuffer.withLock { buffer -> [CheckedContinuation<Void, Never>] in
                    buffer.bytes += chunk
                    let text = String(decoding: buffer.bytes, as: UTF8.self)
                    let ready = buffer.waiters.filter { text.contains($0.0) }.map(\.2)
                    buffer.waiters.removeAll { text.contains($0.0) }
                    return ready
                }
                for waiter in ready { waiter.resume() }
            }
            // The child has closed standard error: nothing more will appear.
            let left = self.stderrBuffer.withLock { buffer in
                defer { buffer.waiters = [] }
                return buffer.waiters.map(\.2)
            }
            for waiter in left { waiter.resume() }
        }.start()
    }

    /// Everything the child wrote to standard error so far.
    var stderrText: String { String(decoding: stderrBuffer.withLock { $0.bytes }, as: UTF8.self) }

    /// Returns once standard error contains `text`, the child has closed it, or the task is cancelled
    /// (as `withTimeout` does when its bound runs out). Event-driven: the reader thread resumes it.
    func waitForStderr(containing text: String) async {
        let id = UInt64.random(in: 1...UInt64.max)
        let key = "\(id)\u{0}"
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let present = stderrBuffer.withLock { buffer -> Bool in
                    if Task.isCancelled || String(decoding: buffer.bytes, as: UTF8.self).contains(text) { return true }
                    buffer.waiters.append((text, key, continuation))
                    return false
                }
                if present { continuation.resume() }
            }
        } onCancel: {
            let waiter = stderrBuffer.withLock { buffer -> CheckedContinuation<Void, Never>? in
                guard let index = buffer.waiters.firstIndex(where: { $0.1 == key }) else { return nil }
                return buffer.waiters.remove(at: index).2
            }
            waiter?.resume()
        }
    }

    /// Closes the child's stdin and waits for it to end.
    func finish() async -> Status? {
        try? stdin.fileHandleForWriting.close()
        var iterator = ended.makeAsyncIterator()
        return await iterator.next()
    }

    /// Kills the child if it is still running.
    func kill() {
        if process.isRunning { process.terminate() }
    }
}
