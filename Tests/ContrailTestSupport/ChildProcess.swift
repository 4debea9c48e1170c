import ContrailSupport
import Foundation

/// A child process for tests (a server, a browser, a crash-test writer): everything it prints is
/// collected, a test waits (bounded) for a line or a port in it, kills it with SIGKILL and awaits
/// its exit; dropping the last reference SIGKILLs it, so none is left running.
///
/// ```swift
/// let child = try ChildProcess(executable, ["serve", "--port", "0"])
/// let port = try await child.port(after: "listening on ws://127.0.0.1:", terminator: { $0 == "/" })
/// …
/// await child.kill()
/// ```
public final class ChildProcess: Sendable {
    private let process: Process
    /// The child's standard input: open until ``closeInput()`` (a child can wait for its end).
    private let input = Pipe()
    private let state = Shared()

    /// What the reader thread, the termination handler, the timers and the test share.
    private final class Shared: Sendable {
        let lock = SanitizerVisibleMutex(State())
        func withLock<R>(_ body: (inout State) -> R) -> R { lock.withLock { body(&$0) } }
    }

    /// What a waiter looks at: the output so far, whether it ended, whether the child exited.
    private struct Progress: Sendable {
        var text = ""
        var isEOF = false
        var hasExited = false
    }

    /// A waiting task: `outcome` says true (satisfied), false (never will be) or nil (not yet).
    private struct Waiter {
        var id: Int
        var outcome: @Sendable (Progress) -> Bool?
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var progress = Progress()
        var nextID = 0
        var waiters: [Waiter] = []
    }

    /// Starts `executable` with `arguments`, with `environment` added to this process's. Standard
    /// output and standard error are both collected (`output` false: only standard error).
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], output: Bool = true) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = output ? pipe : FileHandle.nullDevice
        process.standardInput = input
        self.process = process
        let state = self.state
        process.terminationHandler = { _ in Self.update(state) { $0.hasExited = true } }
        try process.run()
        // A blocking read on a thread of its own, not `readabilityHandler`: tearing down that
        // libdispatch source races the descriptor's close and now and then crashes libdispatch on
        // Linux (swift-corelibs-libdispatch#949).
        let handle = pipe.fileHandleForReading
        Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                Self.update(state) { $0.text += text }
            }
            Self.update(state) { $0.isEOF = true }
        }.start()
    }

    /// Applies `change` and resumes every waiter whose outcome it settles.
    private static func update(_ state: Shared, _ change: (inout Progress) -> Void) {
        let settled = state.withLock { s -> [(CheckedContinuation<Bool, Never>, Bool)] in
            change(&s.progress)
            let progress = s.progress
            var settled: [(CheckedContinuation<Bool, Never>, Bool)] = []
            s.waiters.removeAll { waiter in
                guard let outcome = waiter.outcome(progress) else { return false }
                settled.append((waiter.continuation, outcome))
                return true
            }
            return settled
        }
        for (continuation, outcome) in settled { continuation.resume(returning: outcome) }
    }

    /// Waits until `outcome` settles (true or false), or returns false once `timeout` of real time
    /// runs out (a bound, not a delay).
    private func wait(timeout: Duration, until outcome: @escaping @Sendable (Progress) -> Bool?) async -> Bool {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        let state = self.state
        let timer = Task.detached {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool? in
                if let now = outcome(s.progress) { return now }
                s.waiters.append(Waiter(id: id, outcome: outcome, continuation: continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Everything the process printed so far.
    public var text: String { state.withLock { $0.progress.text } }

    /// The child's process id.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// Whether the child still runs.
    public var isRunning: Bool { process.isRunning }

    /// Whether the child's output reached its end (it closed its end of the pipe, usually by exiting).
    public var isOutputComplete: Bool { state.withLock { $0.progress.isEOF } }

    /// How the child ended: `.exited(status)` or `.signalled(signal)`; nil while it runs.
    public var termination: Termination? {
        guard state.withLock({ $0.progress.hasExited }) else { return nil }
        return process.terminationReason == .exit ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
    }

    /// How a child process ended.
    public enum Termination: Equatable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal killed it.
        case signalled(Int32)
    }

    /// Returns once the output so far satisfies `predicate` (true), or false when the output ends
    /// first or `timeout` of real time runs out (a bound, not a delay).
    public func waitForOutput(timeout: Duration = .seconds(30), _ predicate: @escaping @Sendable (String) -> Bool) async -> Bool {
        await wait(timeout: timeout) { progress in
            predicate(progress.text) ? true : progress.isEOF ? false : nil
        }
    }

    /// Returns once the output contains `text` (true), or false when the output ends or `timeout` runs out.
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(30)) async -> Bool {
        await waitForOutput(timeout: timeout) { $0.contains(text) }
    }

    /// Returns once the child's output has ended (true), or false when `timeout` runs out first.
    public func waitForOutputToEnd(timeout: Duration = .seconds(30)) async -> Bool {
        _ = await waitForOutput(timeout: timeout) { _ in false }
        return isOutputComplete
    }

    /// The port printed after `prefix` and followed by a character `terminator` accepts, within
    /// `timeout`; SIGKILLs the process and throws `TestFailure` if it does not appear.
    public func port(after prefix: String, terminator: @escaping @Sendable (Character) -> Bool,
                     timeout: Duration = .seconds(30)) async throws -> UInt16 {
        let found = await waitForOutput(timeout: timeout) { Self.port(in: $0, after: prefix, terminator: terminator) != nil }
        guard found, let port = Self.port(in: text, after: prefix, terminator: terminator) else {
            await kill()
            throw TestFailure("\(process.executableURL?.lastPathComponent ?? "process") did not start: \(text)")
        }
        return port
    }

    private static func port(in text: String, after prefix: String, terminator: (Character) -> Bool) -> UInt16? {
        guard let range = text.range(of: prefix) else { return nil }
        let rest = text[range.upperBound...]
        let digits = rest.prefix { $0.isNumber }
        guard let next = rest.dropFirst(digits.count).first, terminator(next) else { return nil }
        return UInt16(digits)
    }

    /// Waits until the child has exited and its output has ended (so ``text`` holds all of it: the
    /// exit can be seen before the reader thread has read the last bytes): true, or false when
    /// `timeout` of real time runs out first.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(30)) async -> Bool {
        await wait(timeout: timeout) { $0.hasExited && $0.isEOF ? true : nil }
    }

    /// Closes the child's standard input: a child that reads it to its end goes on.
    public func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Sends `signal` (SIGKILL by default) to the child if it still runs, without waiting.
    public func signal(_ signal: Int32 = SIGKILL) {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, signal) }
    }

    /// SIGKILLs the child and waits (bounded, 30 s) until it has exited.
    public func kill() async {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
        await waitForExit()
    }

    deinit {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
