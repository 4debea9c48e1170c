import ContrailWebSocket
import Foundation
import ContrailSupport
import Testing

/// `contrail serve` running in a child process: started on a free loopback port, killed with
/// SIGKILL (no `stop()`, no compaction) to test crash recovery for real.
final class ServerProcess: Sendable {
    /// The port the child listens on.
    let port: UInt16
    private let process: Process
    private let shared = Shared()

    /// What the child's callbacks and the test share.
    private final class Shared: Sendable {
        /// Everything the child wrote to stderr so far, and who waits for the listening line.
        let output = SanitizerVisibleMutex<(text: String, waiter: CheckedContinuation<UInt16, any Error>?)>(("", nil))
        /// Whether the child exited, and who waits for that.
        let exited = SanitizerVisibleMutex<(done: Bool, waiter: CheckedContinuation<Void, any Error>?)>((false, nil))
    }

    /// The `contrail` executable built next to the test bundle.
    static var executable: URL {
        get throws {
            let nextToTests = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent().appending(path: "contrail")
            let candidates = [nextToTests, URL(filePath: FileManager.default.currentDirectoryPath).appending(path: ".build/debug/contrail")]
            guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path(percentEncoded: false)) }) else {
                throw ServerProcessError(message: "no contrail executable at \(candidates.map { $0.path(percentEncoded: false) }); run swift build --build-tests")
            }
            return found
        }
    }

    /// Starts `contrail serve --port 0 --data directory` plus `arguments`, and waits (bounded) for
    /// its "listening" line.
    init(data directory: URL, arguments: [String] = [], environment: [String: String] = [:], timeout: Duration = .seconds(60)) async throws {
        let process = Process()
        process.executableURL = try Self.executable
        process.arguments = ["serve", "--port", "0", "--data", directory.path(percentEncoded: false)] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        self.process = process
        let shared = self.shared
        // Drain stderr for the child's whole life (a full pipe would block it).
        let drain: @Sendable (Data) -> Void = { data in
            let resume = shared.output.withLock { state -> (CheckedContinuation<UInt16, any Error>, UInt16)? in
                state.text += String(decoding: data, as: UTF8.self)
                guard let waiter = state.waiter, let port = Self.listeningPort(in: state.text) else { return nil }
                state.waiter = nil
                return (waiter, port)
            }
            if let (waiter, port) = resume { waiter.resume(returning: port) }
        }
        process.terminationHandler = { _ in
            let waiter = shared.exited.withLock { state in
                state.done = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
            let failed = shared.output.withLock { state -> CheckedContinuation<UInt16, any Error>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            failed?.resume(throwing: ServerProcessError(message: "contrail serve exited before listening"))
        }
        try process.run()
        PipeReader.drain(pipe.fileHandleForReading, drain)
        let timer = Task {
            try await Task.sleep(for: timeout)
            let waiter = shared.output.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: ServerProcessError(message: "contrail serve did not listen within \(timeout)"))
        }
        defer { timer.cancel() }
        let port = try await withCheckedThrowingContinuation { continuation in
            let ready = shared.output.withLock { state -> UInt16? in
                if let port = Self.listeningPort(in: state.text) { return port }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        self.port = port
    }

    /// The child's resident memory in bytes (VmRSS).
    var residentBytes: Int {
        get throws {
            let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                  let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
                throw ServerProcessError(message: "no VmRSS in /proc status")
            }
            return kib * 1024
        }
    }

    /// The child's process id.
    var processIdentifier: Int32 { process.processIdentifier }

    /// What the child logged so far.
    var log: String { shared.output.withLock { $0.text } }

    /// Whether the child logs `text` within `timeout` (its stderr is read asynchronously, so a
    /// line can arrive after the reply that followed it).
    func logs(_ text: String, within timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !log.contains(text) {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Sends SIGKILL and waits (bounded) until the child is gone.
    func kill() async throws {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        try await waitForExit(timeout: .seconds(30))
    }

    private func waitForExit(timeout: Duration) async throws {
        let shared = self.shared
        let timer = Task {
            try await Task.sleep(for: timeout)
            let waiter = shared.exited.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: ServerProcessError(message: "contrail serve did not exit within \(timeout)"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done = shared.exited.withLock { state -> Bool in
                if state.done { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }

    private static func listeningPort(in text: String) -> UInt16? {
        guard let range = text.range(of: "listening on ws://127.0.0.1:") else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isNumber }
        guard text[range.upperBound...].dropFirst(digits.count).first == "/" else { return nil }
        return UInt16(digits)
    }

    deinit {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}

struct ServerProcessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
