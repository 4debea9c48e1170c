import Foundation
import Synchronization
import ContrailSupport

/// A test failure with a message.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process for tests (a server): its output is collected, it can be SIGKILLed and awaited,
/// and dropping the last reference SIGKILLs it, so none is left running.
final class ChildProcess: Sendable {
    private let process: Process
    private let exited: AsyncStream<Void>
    private let chunks: Mutex<AsyncStream<String>?>
    private let output = OutputLog()

    /// Starts `executable` with `arguments`.
    init(_ executable: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        let (chunks, chunkContinuation) = AsyncStream.makeStream(of: String.self)
        let (exited, exitContinuation) = AsyncStream.makeStream(of: Void.self)
        self.process = process
        self.exited = exited
        self.chunks = Mutex(chunks)
        process.terminationHandler = { _ in exitContinuation.finish() }
        try process.run()
        // A blocking read on a thread of its own, not `readabilityHandler`: tearing down that
        // libdispatch source races the descriptor's close and now and then crashes libdispatch on
        // Linux (swift-corelibs-libdispatch#949).
        let handle = pipe.fileHandleForReading
        Thread { [output] in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                output.text.withLock { $0 += text }
                chunkContinuation.yield(text)
            }
            chunkContinuation.finish()
        }.start()
    }

    /// The port printed after `prefix` and followed by `terminator`, within `timeout`; SIGKILLs the
    /// process and throws if it does not appear. Call once.
    func port(after prefix: String, terminator: @escaping @Sendable (Character) -> Bool,
              timeout: Duration = .seconds(30)) async throws -> UInt16 {
        guard let chunks = self.chunks.withLock({ $0.take() }) else { throw TestFailure("port(after:) called twice") }
        let found = try? await within(timeout) { () -> UInt16? in
            var seen = ""
            for await chunk in chunks {
                seen += chunk
                if let range = seen.range(of: prefix) {
                    let rest = seen[range.upperBound...]
                    let digits = rest.prefix { $0.isNumber }
                    if let next = rest.dropFirst(digits.count).first, terminator(next) { return UInt16(digits) }
                }
            }
            return nil
        }
        guard let port = found else {
            await kill()
            throw TestFailure("\(process.executableURL?.lastPathComponent ?? "process") did not start: \(text)")
        }
        // Keep draining the pipe so the child never blocks on a full one.
        Task { for await _ in chunks {} }
        return port
    }

    /// Everything the process printed so far.
    var text: String { output.text.withLock { $0 } }

    /// SIGKILLs the process and waits until it has exited.
    func kill() async {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        for await _ in exited {}
    }

    deinit {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}

/// What a child process printed, shared with its pipe's reader.
final class OutputLog: Sendable {
    let text = Mutex("")
}
