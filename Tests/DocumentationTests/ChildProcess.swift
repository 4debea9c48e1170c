import Foundation

/// Runs a program to its end with a bounded wait: its output (stdout and stderr together) goes to
/// a temporary file, so a chatty child never blocks on a full pipe, and a child still running at the
/// deadline is terminated and reported.
enum ChildProcess {
    /// What a finished child left.
    struct Outcome: Sendable {
        /// The exit status (or the terminating signal).
        var status: Int32
        /// Everything it wrote to stdout and stderr.
        var output: String
    }

    /// Why a child could not be run to its end.
    enum Failure: Error, CustomStringConvertible {
        case couldNotStart(String, String)
        case timedOut(String, Duration)

        var description: String {
            switch self {
            case .couldNotStart(let program, let reason): return "could not start \(program): \(reason)"
            case .timedOut(let program, let limit): return "\(program) did not finish within \(limit); terminated"
            }
        }
    }

    /// Runs `executable` with `arguments` and waits for it, at most `timeout`.
    static func run(_ executable: URL, _ arguments: [String], timeout: Duration) async throws(Failure) -> Outcome {
        let outputURL = FileManager.default.temporaryDirectory.appending(path: "contrail-doc-\(UUID().uuidString).out")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil),
              let output = try? FileHandle(forWritingTo: outputURL) else {
            throw .couldNotStart(executable.path, "cannot create \(outputURL.path)")
        }
        defer {
            try? output.close()
            try? FileManager.default.removeItem(at: outputURL)
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        let exited = ExitSignal()
        process.terminationHandler = { _ in exited.fire() }
        do { try process.run() } catch { throw .couldNotStart(executable.path, "\(error)") }
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await exited.wait(); return true }
            group.addTask {
                // The deadline of the bounded wait, not a wait for the child: the child's exit wins the race.
                try? await ContinuousClock().sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first {
                // Our own child, by its pid. SIGKILL: a SIGTERM can be blocked by the signal mask the
                // child inherits from the test process, and was seen to leave the child running.
                kill(process.processIdentifier, SIGKILL)
                exited.fire()
            }
            group.cancelAll()
            await group.waitForAll()
            return first
        }
        guard finished else { throw .timedOut(executable.lastPathComponent, timeout) }
        // The termination handler has run: the status is known.
        let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        return Outcome(status: process.terminationStatus, output: text)
    }
}

/// A one-shot signal between the process's termination handler (any thread) and an async waiter.
/// `@unchecked Sendable`: `fired` and `waiter` are only touched under `lock`.
private final class ExitSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var waiter: CheckedContinuation<Void, Never>?

    /// Marks the signal fired and resumes the waiter, once.
    func fire() {
        lock.lock()
        let continuation = waiter
        waiter = nil
        fired = true
        lock.unlock()
        continuation?.resume()
    }

    /// Returns once ``fire()`` has been called.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if fired {
                lock.unlock()
                continuation.resume()
                return
            }
            waiter = continuation
            lock.unlock()
        }
    }
}
