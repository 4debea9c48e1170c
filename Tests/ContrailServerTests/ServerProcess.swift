import ContrailTestSupport
import Foundation
import ContrailSupport
import Testing

/// `contrail serve` running in a child process: started on a free loopback port, killed with
/// SIGKILL (no `stop()`, no compaction) to test crash recovery for real.
final class ServerProcess: Sendable {
    /// The port the child listens on.
    let port: UInt16
    private let child: ChildProcess

    /// The `contrail` executable built next to the test bundle.
    static var executable: URL {
        get throws {
            let nextToTests = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent().appending(path: "contrail")
            let candidates = [nextToTests, URL(filePath: FileManager.default.currentDirectoryPath).appending(path: ".build/debug/contrail")]
            guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path(percentEncoded: false)) }) else {
                throw TestFailure("no contrail executable at \(candidates.map { $0.path(percentEncoded: false) }); run swift build --build-tests")
            }
            return found
        }
    }

    /// Starts `contrail serve --port 0 --data directory` plus `arguments`, and waits (bounded) for
    /// its "listening" line.
    init(data directory: URL, arguments: [String] = [], environment: [String: String] = [:], timeout: Duration = .seconds(60)) async throws {
        child = try ChildProcess(try Self.executable, ["serve", "--port", "0", "--data", directory.path(percentEncoded: false)] + arguments,
                                 environment: environment, output: false)
        port = try await child.port(after: "listening on ws://127.0.0.1:", terminator: { $0 == "/" }, timeout: timeout)
    }

    /// The child's resident memory in bytes (VmRSS).
    var residentBytes: Int {
        get throws {
            let status = try String(contentsOfFile: "/proc/\(processIdentifier)/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                  let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
                throw TestFailure("no VmRSS in /proc status")
            }
            return kib * 1024
        }
    }

    /// The child's process id.
    var processIdentifier: Int32 { child.processIdentifier }

    /// What the child logged so far.
    var log: String { child.text }

    /// Whether the child logs `text` within `timeout` (its stderr is read asynchronously, so a
    /// line can arrive after the reply that followed it).
    func logs(_ text: String, within timeout: Duration = .seconds(30)) async throws -> Bool {
        await child.waitForOutput(containing: text, timeout: timeout)
    }

    /// Sends SIGTERM (a drain) and waits (bounded by `timeout`) until the child has exited; how it ended.
    func terminate(within timeout: Duration = .seconds(60)) async -> ChildProcess.Termination? {
        child.signal(SIGTERM)
        _ = await child.waitForExit(timeout: timeout)
        return child.termination
    }

    /// Sends SIGKILL and waits (bounded) until the child is gone.
    func kill() async throws {
        await child.kill()
        if child.isRunning { throw TestFailure("contrail serve did not exit after SIGKILL") }
    }
}
