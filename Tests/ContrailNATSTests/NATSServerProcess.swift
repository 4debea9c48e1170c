import Foundation
import Synchronization
import ContrailSupport
import ContrailNATS
import ContrailTestSupport
import Testing

/// A real `nats-server -js` child process on a loopback port with a temporary store directory.
final class NATSServerProcess: Sendable {
    /// Why tests that need a server are skipped when it is missing.
    static let skipReason: Comment = "nats-server is not installed (apt-get install nats-server; .ci/run installs it)"
    /// Whether to skip them: only when it is missing and CONTRAIL_REQUIRE_NATS (set by .ci/run) is not,
    /// so CI fails rather than skips.
    static let skipped = executable == nil && ProcessInfo.processInfo.environment["CONTRAIL_REQUIRE_NATS"] == nil

    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/usr/local/bin"]
        return dirs.map { $0 + "/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The client port.
    let port: UInt16
    /// The JetStream store directory (kept across `restart`).
    let storeDirectory: String
    private let extra: [String]
    private let name: String?
    private let child: ChildProcess

    /// `nats://127.0.0.1:port`.
    var url: NATSServerURL { NATSServerURL(host: "127.0.0.1", port: port) }

    private init(port: UInt16, storeDirectory: String, extra: [String], name: String?, child: ChildProcess) {
        self.port = port
        self.storeDirectory = storeDirectory
        self.extra = extra
        self.name = name
        self.child = child
    }

    /// Starts a server and waits (up to 15 s) until it accepts clients.
    /// - Parameters:
    ///   - port: nil lets the server pick a free one.
    ///   - extra: further arguments (cluster settings).
    static func start(port: UInt16? = nil, storeDirectory: String? = nil, name: String? = nil,
                      extra: [String] = []) async throws -> NATSServerProcess {
        guard let executable else { throw TestFailure("\(skipReason)") }
        let store = storeDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("contrail-nats-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        var arguments = ["-js", "-a", "127.0.0.1", "-p", port.map(String.init) ?? "-1", "-sd", store]
        if let name { arguments += ["-n", name] }
        arguments += extra
        let child = try ChildProcess(URL(fileURLWithPath: executable), arguments)
        let port = try await child.port(after: "Listening for client connections on 127.0.0.1:", terminator: { $0.isNewline })
        return NATSServerProcess(port: port, storeDirectory: store, extra: extra, name: name, child: child)
    }

    /// SIGKILLs the server and waits until it has exited.
    func kill() async {
        await child.kill()
    }

    /// A new server process on the same port and store directory (after `kill`).
    func restart() async throws -> NATSServerProcess {
        try await NATSServerProcess.start(port: port, storeDirectory: storeDirectory, name: name, extra: extra)
    }

    /// Starts a server with `configuration` (nats-server's config syntax, e.g. an `authorization`
    /// block) written to a file in its store directory.
    static func start(configuration: String) async throws -> NATSServerProcess {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("contrail-nats-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let file = store + "/nats.conf"
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        return try await start(storeDirectory: store, extra: ["-c", file])
    }

    /// Users "full" (password "pw-full") and "blind" ("pw-blind", who may not subscribe to the
    /// scopes' subjects: a cluster server connected as it gets no wake-up).
    static let fullAndBlindUsers = """
        authorization {
          users = [
            {user: "full", password: "pw-full"}
            {user: "blind", password: "pw-blind", permissions: {subscribe: {deny: ["contrail.scope.>"]}}}
          ]
        }
        """

    /// Kills the server and waits until it has exited (the store stays for `restart`).
    func stop() async {
        await kill()
    }

    /// Three nodes with routes to each other, each with its own store.
    static func startCluster() async throws -> [NATSServerProcess] {
        let routes = try freePorts(3)
        var nodes: [NATSServerProcess] = []
        for index in 0..<3 {
            let others = routes.indices.filter { $0 != index }.map { "nats://127.0.0.1:\(routes[$0])" }
            nodes.append(try await start(name: "node-\(index)", extra: [
                "--cluster_name", "contrail", "--cluster", "nats://127.0.0.1:\(routes[index])",
                "--routes", others.joined(separator: ","),
            ]))
        }
        return nodes
    }

    /// Everything the server printed.
    var output: String { child.text }
}

/// Free loopback TCP ports (bound to port 0 together, then released).
func freePorts(_ count: Int) throws -> [UInt16] {
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var ports: [UInt16] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        fds.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("bind failed") }
        ports.append(UInt16(bigEndian: address.sin_port))
    }
    return ports
}

/// Runs `body` again while it fails with an error that a failover or a leader election explains
/// (disconnected, timed out, no responders, JetStream 503s, a cluster still gathering its peers),
/// for at most `duration`.
func retryingThroughFailover<T: Sendable>(_ duration: Duration,
                                          _ body: @escaping @Sendable () async throws(NATSError) -> T) async throws -> T {
    try await withTimeout(duration) {
        while true {
            do throws(NATSError) {
                return try await body()
            } catch .disconnected, .timedOut, .noResponders {
                continue
            } catch .jetStream(let error) where error.code == 503
                || [JetStreamAPIError.temporarilyUnavailable, JetStreamAPIError.noSuitablePeers].contains(error.errorCode) {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                throw error
            }
        }
    }
}
