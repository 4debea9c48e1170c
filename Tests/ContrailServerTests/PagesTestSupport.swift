import Contrail
import ContrailServer
import ContrailTestSupport
import Dispatch
import Foundation
import Testing
import ContrailSupport

/// A raw HTTP exchange with a page server over a loopback socket: sends bytes, reads until the server
/// closes (pages always answer `Connection: close`). The blocking socket calls run on a thread of
/// their own, never on the cooperative pool or Dispatch's (narrow) global pool; every read is bounded
/// by a receive timeout of 60 s (CI under ThreadSanitizer once took over 10 s to answer a page).
enum PagesHTTP {
    struct Response {
        let status: Int
        let head: String
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        /// The value of header `name` (case-insensitive).
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    typealias Failure = TestFailure

    /// `GET path` (or another method) with optional extra header lines.
    static func request(port: UInt16, method: String = "GET", path: String, extraHeaders: String = "") async throws -> Response {
        let text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(extraHeaders)\r\n"
        return try await exchange(port: port, bytes: Array(text.utf8))
    }

    /// Sends `bytes` and parses the response the server sends before closing. With `endingInput`, the
    /// client shuts down its sending side after the bytes (the server reads the end of the stream).
    static func exchange(port: UInt16, bytes: [UInt8], endingInput: Bool = false) async throws -> Response {
        let raw: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try blockingExchange(port: port, bytes: bytes, endingInput: endingInput) })
            }.start()
        }
        guard let end = raw.indices.first(where: { i in i + 3 < raw.count && raw[i...i + 3].elementsEqual([13, 10, 13, 10]) }) else {
            throw Failure(description: "no complete HTTP head in \(raw.count) bytes")
        }
        let head = String(decoding: raw[..<end], as: UTF8.self)
        let statusText = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        guard let status = Int(statusText) else { throw Failure(description: "bad status line in '\(head.prefix(80))'") }
        return Response(status: status, head: head, body: Array(raw[(end + 4)...]))
    }

    private static func blockingExchange(port: UInt16, bytes: [UInt8], endingInput: Bool) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to 127.0.0.1:\(port) failed") }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The server may answer (431) and close before reading everything: stop sending then.
            if n <= 0 { break }
            sent += n
        }
        if endingInput { shutdown(fd, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[..<n]; continue }
            if n == 0 || errno == ECONNRESET { break }
            throw Failure(description: "recv failed or timed out (errno \(errno)) after \(received.count) bytes")
        }
        return received
    }
}

/// A server with pages on a loopback port, stopped by the caller.
func startPageServer(pingInterval: Duration = .seconds(10), configure: (inout ServerOptions) -> Void = { _ in })
    async throws -> (ContrailServer, UInt16)
{
    // The tests' usual options (silent, 120 s to establish: two suites at once timed out a
    // `DrainTests` session at the default 10 s).
    var options = Wire.options()
    options.servesPages = true
    options.pingInterval = pingInterval
    // A loaded machine may hold a child's HTTP request past the default 10 s: CI under
    // ThreadSanitizer closed a `contrail admin` import unanswered.
    options.handshakeTimeout = .seconds(60)
    configure(&options)
    let server = try ContrailServer(options: options)
    let port = try await server.start()
    return (server, port)
}

/// A scope state JSON made comparable across replicas: objects' null properties dropped and every
/// number as a Double (Swift writes `10.0` where JavaScript writes `10`).
func comparableState(_ json: JSON) -> JSON {
    switch json {
    case .int(let value): return .double(Double(value))
    case .uint(let value): return .double(Double(value))
    case .array(let items): return .array(items.map(comparableState))
    case .object(let members):
        var result: [String: JSON] = [:]
        for (key, value) in members where value != .null { result[key] = comparableState(value) }
        return .object(result)
    default: return json
    }
}

/// The command line that runs `executable` at low CPU priority (`nice -n 15`, same process id), so a
/// browser or Node child does not starve the rest of the test suite on a small machine.
func politely(_ executable: String, _ arguments: [String]) -> (URL, [String]) {
    guard let nice = executableOnPath("nice") else { return (URL(filePath: executable), arguments) }
    return (URL(filePath: nice), ["-n", "15", executable] + arguments)
}

/// An executable found on PATH, or nil.
func executableOnPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A child process's exit status and output.
struct ChildResult {
    let status: Int32
    let output: String
    let timedOut: Bool
}

/// Runs `executable` with `arguments`, stdout and stderr into one temporary file, killing it
/// (SIGKILL) after `timeout`. The child gets this process's environment with `environment` applied
/// (a nil value removes the variable).
func runChild(_ executable: String, _ arguments: [String], environment: [String: String?] = [:],
              timeout: Duration) async throws -> ChildResult {
    let outputURL = FileManager.default.temporaryDirectory.appending(path: "contrail-child-\(UUID().uuidString).log")
    try Data().write(to: outputURL)
    defer { try? FileManager.default.removeItem(at: outputURL) }
    let output = try FileHandle(forWritingTo: outputURL)
    let process = Process()
    (process.executableURL, process.arguments) = politely(executable, arguments)
    var childEnvironment = ProcessInfo.processInfo.environment
    for (name, value) in environment { childEnvironment[name] = value }
    process.environment = childEnvironment
    process.standardOutput = output
    process.standardError = output
    let exited = AsyncStream<Void>.makeStream()
    process.terminationHandler = { _ in exited.continuation.yield(); exited.continuation.finish() }
    try process.run()
    let killer = Task {
        try await Task.sleep(for: timeout)
        kill(process.processIdentifier, SIGKILL)
    }
    for await _ in exited.stream {}
    let timedOut = killer.isCancelled == false && process.terminationReason == .uncaughtSignal
    killer.cancel()
    try output.close()
    let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
    return ChildResult(status: process.terminationStatus, output: text, timedOut: timedOut)
}
