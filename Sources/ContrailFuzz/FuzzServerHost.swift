import Contrail
import ContrailServer
import Foundation
import ContrailSupport

/// The server a convergence run talks to, and how it restarts: in this process (reached in memory
/// or over WebSocket on 127.0.0.1), or as a `contrail serve` child process that a restart SIGKILLs.
/// Every variant keeps its data in one directory, so a restart comes back with what was acknowledged.
@MainActor
final class FuzzServerHost {
    enum Kind: Sendable {
        case inMemory
        case webSocket
        /// A child `contrail serve` at this executable path, over WebSocket.
        case childProcess(executable: String)
    }

    let kind: Kind
    let dataDirectory: URL
    private var server: ContrailServer?
    private var child: Process?
    private var port: UInt16 = 0
    /// A connector to the running server.
    private(set) var connector: (any SyncConnector)?

    init(kind: Kind) {
        self.kind = kind
        dataDirectory = FileManager.default.temporaryDirectory
            .appending(path: "contrail-fuzz-\(UUID().uuidString)", directoryHint: .isDirectory)
    }

    /// Starts the server and returns a connector to it.
    func start() async throws -> any SyncConnector {
        let started = try await launch()
        connector = started
        return started
    }

    private func launch() async throws -> any SyncConnector {
        switch kind {
        case .inMemory:
            let server = try makeServer()
            self.server = server
            return server.connector()
        case .webSocket:
            let server = try makeServer()
            self.server = server
            let port = try await server.start()
            return WebSocketConnector(url: "ws://127.0.0.1:\(port)/")
        case .childProcess(let executable):
            try await startChild(executable)
            return WebSocketConnector(url: "ws://127.0.0.1:\(port)/")
        }
    }

    /// Stops the server (a child: SIGKILL, no clean shutdown) and starts it again on the same data.
    func restart() async throws -> any SyncConnector {
        if let server {
            await server.stop()
            self.server = nil
        }
        if let child {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            self.child = nil
        }
        return try await start()
    }

    /// The server's state of `scope`, when the server runs in this process.
    func state(ofScope scope: String) async -> JSON? {
        await server?.state(ofScope: scope)
    }

    /// Stops everything and removes the data.
    func shutDown() async {
        if let server { await server.stop() }
        if let child {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        server = nil
        child = nil
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    private func makeServer() throws -> ContrailServer {
        var options = ServerOptions()
        options.dataDirectory = dataDirectory
        options.host = "127.0.0.1"
        options.port = 0
        options.log = nil
        // The main actor may be busy for a while (a loaded test run): not a reason to refuse a session.
        options.establishTimeout = .seconds(120)
        return try ContrailServer(options: options)
    }

    /// Starts `contrail serve` on the port it had before (or a free one), and waits for its
    /// "listening on" line.
    private func startChild(_ executable: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // As for the server in this process (`makeServer`): a loaded test run may hold a client's
        // SessionCreate back for a while, which the default of 10 s refused (CI, under load).
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", String(port), "--data", dataDirectory.path(percentEncoded: false),
                             "--establish-timeout", "120"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        child = process
        let handle = output.fileHandleForReading
        // A thread of its own reads the child's output for the child's whole life (blocking reads):
        // on a Dispatch global queue it held one of the few threads that Swift's cooperative pool
        // shares on Linux, and two runs with children stalled every task of the process.
        let listening: UInt16? = await withCheckedContinuation { continuation in
            Thread {
                var text = ""
                var waiting: CheckedContinuation<UInt16?, Never>? = continuation
                while case let data = handle.availableData, !data.isEmpty {
                    // Once the port is known, the rest is drained so that the child never blocks on a full pipe.
                    guard waiting != nil else { continue }
                    text += String(decoding: data, as: UTF8.self)
                    if let range = text.range(of: #"listening on [^\s]*:(\d+)"#, options: .regularExpression) {
                        waiting?.resume(returning: text[range].split(separator: ":").last.flatMap { UInt16($0) })
                        waiting = nil
                    }
                }
                waiting?.resume(returning: nil)
            }.start()
        }
        guard let listening else { throw FuzzFailure(kind: .setup, details: "contrail serve did not start") }
        port = listening
    }
}
