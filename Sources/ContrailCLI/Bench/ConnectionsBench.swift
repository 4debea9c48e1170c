import CContrailSystem
import Foundation
import ContrailSupport

/// `contrail bench connections [--sessions N]` (not in `all` or `--smoke`: it takes a minute): how much
/// server memory an idle sync session costs, and whether a new client is still served quickly.
///
/// It starts `contrail serve` as a child process, reads the child's resident memory (VmRSS in
/// /proc/PID/status), opens N sessions from a raw epoll client on one thread (each sends the upgrade
/// request and `SessionCreate`, then `ScopeFetch`, acknowledges the reply with a `Ping`, and idles), reads
/// the RSS again, and times a full `Client.sync` (connect, session, fetch) against the loaded server.
/// The clients bind to 127.0.0.2... (one source address per 20,000 connections) so that the ephemeral
/// ports of one address do not run out. The descriptor limit is raised in this process (the children
/// inherit it), never in the library.
///
/// Figures:
/// - `connections.KiB/websocket.nN`: the same for `contrail echo-server` holding N open WebSockets (the
///   WebSocket layer alone), against the same baseline.
/// - `connections.KiB/session.nN`: server RSS growth per session, against the RSS growth per connection
///   of the plain epoll TCP echo (`PlainTCPEcho`, in a child process too) holding N bare connections.
/// - `connections.KiB/waiting-dropped.nN`, `connections.KiB/waiting-closed.nN`: the same growth on a fresh
///   server after the N clients left (dropped their connections, or sent a close frame first), while their
///   sessions wait for a resume; against the growth per connected session (target: ratio ≤ 1).
/// - `connections.churn.MiB`: server RSS after 30 s of 500-session rounds that open and drop (with
///   `--max-waiting-bytes` at 32 MiB), against its RSS at 10 s: flat under churn is a ratio near 1.
/// - `connections.sync.ms.nN`: the median of 5 `Client.sync` calls with N idle sessions open, against
///   the same on the fresh server.
enum ConnectionsBench {
    /// The internal argument that makes `contrail bench` run the plain echo child.
    static let plainEchoChildArgument = "connections-plain-echo-child"

    static func run(_ options: BenchOptions, sessions: Int) async throws -> [BenchFigure] {
        let count = max(1, sessions)
        try raiseDescriptorLimit(to: count + 1024)
        let executable = URL(filePath: "/proc/self/exe").resolvingSymlinksInPath()

        // Baseline: the plain epoll echo holding `count` bare TCP connections.
        let plainGrowth = try await growthPerConnection(executable, ["bench", plainEchoChildArgument], count: count) { _ in
            [.init(send: [0x21], until: [0x21])]
        }
        // The WebSocket layer alone: `contrail echo-server` holding `count` open WebSockets.
        let webSocketGrowth = try await growthPerConnection(executable, ["echo-server"], count: count) { port in
            [.init(send: upgradeRequest(port: port), until: Array("\r\n\r\n".utf8))]
        }

        // Contrail: `contrail serve` holding `count` sessions that each fetched a scope.
        let server = try ChildServer.start(executable, arguments: ["serve", "--port", "0", "--quiet", "--no-pages"])
        defer { server.kill() }
        let fresh = try await syncMilliseconds(port: server.port)
        let before = try server.residentKiB()
        let opened = ContinuousClock.now
        let held = try await blocking { try RawClient.open(count: count, port: server.port, steps: sessionSteps(port: server.port)) }
        defer { held.close() }
        let openSeconds = Stopwatch.seconds(ContinuousClock.now - opened)
        let growth = Double(try server.residentKiB() - before) / Double(count)
        let loaded = try await syncMilliseconds(port: server.port)
        // Sessions whose clients went away, waiting for a resume: on fresh servers, one per way of leaving.
        let dropped = try await waitingGrowth(executable, count: count, leaving: .drop)
        let closed = try await waitingGrowth(executable, count: count, leaving: .closeHandshake)
        let churn = try await churnResidentMiB(executable)
        if !options.json {
            print("(connections: \(count) sessions opened in \(String(format: "%.1f", openSeconds)) s; server RSS "
                  + "\(String(format: "%.1f", growth)) KiB per session, WebSocket echo \(String(format: "%.2f", webSocketGrowth)) KiB per connection, plain TCP echo \(String(format: "%.2f", plainGrowth)) KiB per connection; "
                  + "waiting sessions \(String(format: "%.1f", dropped)) KiB (connection dropped), \(String(format: "%.1f", closed)) KiB (closed with a close frame); "
                  + "churn: \(churn.sessions) sessions in \(churnSeconds) s, RSS \(churn.atTen) MiB at 10 s, \(churn.atEnd) MiB at the end)")
        }
        return [
            BenchFigure(name: "connections.KiB/websocket.n\(count)", value: webSocketGrowth, unit: "KiB", baseline: plainGrowth),
            BenchFigure(name: "connections.KiB/session.n\(count)", value: growth, unit: "KiB", baseline: plainGrowth),
            BenchFigure(name: "connections.KiB/waiting-dropped.n\(count)", value: dropped, unit: "KiB", baseline: growth),
            BenchFigure(name: "connections.KiB/waiting-closed.n\(count)", value: closed, unit: "KiB", baseline: growth),
            BenchFigure(name: "connections.churn.MiB", value: Double(churn.atEnd), unit: "MiB", baseline: Double(churn.atTen)),
            BenchFigure(name: "connections.sync.ms.n\(count)", value: loaded, unit: "ms", baseline: fresh),
        ]
    }

    /// The server child's RSS growth in KiB per connection while `count` connections that ran `steps`
    /// (given the child's port) are open.
    private static func growthPerConnection(_ executable: URL, _ arguments: [String], count: Int,
                                            steps: @escaping @Sendable (UInt16) -> [RawClient.Step]) async throws -> Double {
        let child = try ChildServer.start(executable, arguments: arguments)
        defer { child.kill() }
        let before = try child.residentKiB()
        let held = try await blocking { try RawClient.open(count: count, port: child.port, steps: steps(child.port)) }
        defer { held.close() }
        return Double(try child.residentKiB() - before) / Double(count)
    }

    /// RSS growth per session, in KiB, of a fresh `contrail serve` after `count` sessions were opened
    /// (as in the connected figure) and their clients then left as `leaving` says, once the server has
    /// let go of every connection (its descriptor count is back where it was) and its memory has settled.
    /// The sessions wait for a resume for the server's whole session expiry, so what is measured is what
    /// a waiting session holds.
    private static func waitingGrowth(_ executable: URL, count: Int, leaving: RawClient.Leaving) async throws -> Double {
        let server = try ChildServer.start(executable, arguments: ["serve", "--port", "0", "--quiet", "--no-pages"])
        defer { server.kill() }
        let descriptors = try server.openDescriptors()
        let before = try server.residentKiB()
        let held = try await blocking { try RawClient.open(count: count, port: server.port, steps: sessionSteps(port: server.port)) }
        held.leave(leaving)
        let deadline = ContinuousClock.now + .seconds(60)
        while try server.openDescriptors() > descriptors + 8 {
            guard ContinuousClock.now < deadline else {
                throw SyncBenchError("bench connections: the server still holds \(try server.openDescriptors() - descriptors) connections 60 s after their clients left")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Then until its memory has settled: no fall of more than 1 % over 3 s (the server returns
        // freed pages on its session ticker, every 1.25 s by default), at most 30 s.
        var samples = [try server.residentKiB()]
        while samples.count < 60, samples.count < 7 || samples[samples.count - 7] - samples[samples.count - 1] > samples[samples.count - 1] / 100 {
            try await Task.sleep(for: .milliseconds(500))
            samples.append(try server.residentKiB())
        }
        return Double(samples[samples.count - 1] - before) / Double(count)
    }

    /// How long the churn figure runs.
    static let churnSeconds = 30

    /// Churn: a fresh `contrail serve --max-waiting-bytes 32 MiB` while rounds of 500 sessions open
    /// (as in the connected figure) and drop their connections, for ``churnSeconds``; the sessions
    /// opened and the server's RSS in MiB at 10 s and at the end (flat: ratio ≈ 1).
    private static func churnResidentMiB(_ executable: URL) async throws -> (sessions: Int, atTen: Int, atEnd: Int) {
        let server = try ChildServer.start(executable, arguments: ["serve", "--port", "0", "--quiet", "--no-pages",
                                                                   "--max-waiting-bytes", "\(32 << 20)"])
        defer { server.kill() }
        let start = ContinuousClock.now
        var sessions = 0
        var atTen: Int?
        while ContinuousClock.now - start < .seconds(churnSeconds) {
            let held = try await blocking { try RawClient.open(count: 500, port: server.port, steps: sessionSteps(port: server.port)) }
            held.leave(.drop)
            sessions += 500
            if atTen == nil, ContinuousClock.now - start >= .seconds(10) { atTen = try server.residentKiB() >> 10 }
        }
        return (sessions, atTen ?? 0, try server.residentKiB() >> 10)
    }

    /// A WebSocket upgrade request for `/`.
    private static func upgradeRequest(port: UInt16) -> [UInt8] {
        Array(("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    /// What each raw session does: upgrade + `SessionCreate` (until the reply), `ScopeFetch` (until its
    /// reply), then a `Ping` acknowledging the reply, as a real client does.
    private static func sessionSteps(port: UInt16) -> [RawClient.Step] {
        [
            .init(send: upgradeRequest(port: port) + maskedTextFrame(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#),
                  until: Array("SessionCreateReply".utf8)),
            .init(send: maskedTextFrame(#"{"type":"ScopeFetch","index":1,"name":"bench","params":{}}"#),
                  until: Array("ScopeFetchReply".utf8)),
            .init(send: maskedTextFrame(#"{"type":"Ping","index":0,"ack":1,"resendMissing":false}"#), until: []),
        ]
    }

    /// A client text frame with the all-zero masking key (legal, and the payload stays as it is).
    private static func maskedTextFrame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        return frame + [0, 0, 0, 0] + payload
    }

    /// The median milliseconds of 5 full `Client.sync` calls (each closed afterwards).
    private static func syncMilliseconds(port: UInt16) async throws -> Double {
        var samples: [Double] = []
        for _ in 0..<5 {
            let start = ContinuousClock.now
            let replica = try await SyncBench.replicas(1, port: port, scope: "connections-probe")[0]
            samples.append(Stopwatch.seconds(ContinuousClock.now - start) * 1000)
            await replica.client.close()
        }
        return Stopwatch.percentile(samples, 0.5)
    }

    /// Raises this process's descriptor limit (soft and hard, as root may) to at least `wanted`.
    static func raiseDescriptorLimit(to wanted: Int) throws {
        var limit = rlimit()
        getrlimit(descriptorLimitResource, &limit)
        guard limit.rlim_cur < rlim_t(wanted) else { return }
        let ceiling = (try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8))
            .flatMap { rlim_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? limit.rlim_max
        let target = min(rlim_t(wanted), ceiling)
        var raised = rlimit(rlim_cur: target, rlim_max: max(target, limit.rlim_max))
        if setrlimit(descriptorLimitResource, &raised) != 0 {
            // Not allowed to raise the hard limit: go as far as it allows.
            raised = rlimit(rlim_cur: min(target, limit.rlim_max), rlim_max: limit.rlim_max)
            setrlimit(descriptorLimitResource, &raised)
        }
        guard raised.rlim_cur >= rlim_t(wanted) else {
            throw SyncBenchError("bench connections needs \(wanted) descriptors; the limit is \(raised.rlim_cur) "
                                 + "(run as root, or raise it with ulimit -Hn / prlimit)")
        }
    }

    private static var descriptorLimitResource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    /// The plain epoll echo's child process: listens on a free loopback port, prints
    /// "listening on 127.0.0.1:PORT" and echoes until killed.
    static func servePlainEchoChild() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 4096) == 0
            }
        }
        guard listener >= 0, listening else { throw SyncBenchError("plain echo child: cannot listen (errno \(errno))") }
        print("listening on 127.0.0.1:\(UInt16(bigEndian: address.sin_port))")
        fflush(nil)
        PlainTCPEcho.serve(listener: listener, stop: eventfd(0, Int32(EFD_NONBLOCK)))
    }

    /// Runs blocking work on a thread of its own.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// A server running as a child process of the benchmark, found by the port it prints on startup.
private struct ChildServer {
    let process: Process
    let port: UInt16

    /// Starts `executable arguments` and waits (at most 30 s) for a line naming its port
    /// ("listening on HOST:PORT" or "... ws://HOST:PORT/") on stdout or stderr.
    static func start(_ executable: URL, arguments: [String]) throws -> ChildServer {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let fd = output.fileHandleForReading.fileDescriptor
        var text = ""
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let port = Self.port(in: text) {
                // Keep draining the child's output, so that it never blocks writing a log line.
                let handle = output.fileHandleForReading
                Thread { while !handle.availableData.isEmpty {} }.start()
                return ChildServer(process: process, port: port)
            }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1000) >= 0 else { continue }
            guard entry.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            text += String(decoding: chunk[..<n], as: UTF8.self)
        }
        process.terminate()
        throw SyncBenchError("\(executable.path) \(arguments.joined(separator: " ")) did not report its port: \(text)")
    }

    /// The port in "...127.0.0.1:PORT" at the end of the first line that has one.
    private static func port(in text: String) -> UInt16? {
        for line in text.split(separator: "\n") where line.contains("listening on") {
            guard let colon = line.lastIndex(of: ":") else { continue }
            let digits = line[line.index(after: colon)...].prefix(while: \.isNumber)
            if let port = UInt16(digits) { return port }
        }
        return nil
    }

    /// The child's resident set size (VmRSS) in KiB.
    func residentKiB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) else {
            throw SyncBenchError("no VmRSS for process \(process.processIdentifier)")
        }
        return kib
    }

    /// The number of descriptors the child holds open.
    func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
    }

    /// Ends the child at once (SIGKILL) and reaps it.
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// The benchmark's cheap client: opens many connections from one thread with epoll, runs a short
/// script of (send, wait for a marker) steps on each, and then holds them open, idle.
private enum RawClient {
    /// Send `send`, then wait until the received bytes contain `until` (nothing to wait for if empty).
    struct Step: Sendable {
        var send: [UInt8]
        var until: [UInt8]
    }

    /// How a client leaves: its connection dropped (closed without a WebSocket close frame), or a
    /// WebSocket close frame (1000) and then the socket closed.
    enum Leaving: Sendable { case drop, closeHandshake }

    /// Open connections; `close()` closes them all.
    final class Held: Sendable {
        let fds: [Int32]
        init(fds: [Int32]) { self.fds = fds }
        func close() { for fd in fds { Glibc.close(fd) } }

        /// Leaves every connection as `leaving` says (each descriptor is closed). A close handshake is
        /// done as a browser does it: the close frame, then reading until the server closes the TCP
        /// connection (RFC 6455 §7.1.1: the server closes first), at most 10 s per connection.
        func leave(_ leaving: Leaving) {
            if leaving == .closeHandshake {
                // A masked close frame with code 1000 (all-zero mask).
                let frame: [UInt8] = [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE8]
                for fd in fds { _ = frame.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
                var scratch = [UInt8](repeating: 0, count: 4096)
                for fd in fds {
                    while true {
                        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                        guard poll(&entry, 1, 10_000) > 0 else { break }
                        let n = read(fd, &scratch, scratch.count)
                        if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                        if n <= 0 { break }
                    }
                }
            }
            close()
        }
    }

    /// Connections opened at once, at most (the rest wait for one of them to finish its script).
    static let window = 512
    /// Connections per source address (the ephemeral port range holds about 28,000).
    static let perSourceAddress = 20_000

    /// Opens `count` connections to 127.0.0.1:`port` and runs `steps` on each; returns once every
    /// script is done. Throws on any failure, or when nothing happens for 30 s.
    static func open(count: Int, port: UInt16, steps: [Step]) throws -> Held {
        let epoll = epoll_create1(0)
        guard epoll >= 0 else { throw SyncBenchError("epoll_create1 failed (errno \(errno))") }
        defer { Glibc.close(epoll) }
        var fds = [Int32](repeating: -1, count: count)
        var stepOf = [Int](repeating: -1, count: count)   // -1: connecting
        var inbox = [[UInt8]](repeating: [], count: count)
        var started = 0
        var finished = 0
        var events = [epoll_event](repeating: epoll_event(), count: 1024)
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        do {
            while finished < count {
                while started < count && started - finished < window {
                    fds[started] = try connect(index: started, port: port, epoll: epoll)
                    started += 1
                }
                let ready = epoll_wait(epoll, &events, Int32(events.count), 30_000)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else {
                    throw SyncBenchError("raw client: nothing happened for 30 s (\(finished) of \(count) sessions done)")
                }
                for event in events[..<Int(ready)] {
                    let index = Int(event.data.u64)
                    let fd = fds[index]
                    if stepOf[index] == -1 {
                        var failure: Int32 = 0
                        var length = socklen_t(MemoryLayout<Int32>.size)
                        getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
                        guard failure == 0 else { throw SyncBenchError("raw client: connect failed (errno \(failure))") }
                        var modify = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: UInt64(index)))
                        epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &modify)
                        stepOf[index] = 0
                        try send(steps[0].send, to: fd)
                    } else {
                        let n = read(fd, &scratch, scratch.count)
                        if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                        guard n > 0 else { throw SyncBenchError("raw client: the server closed a connection (errno \(n == 0 ? 0 : errno))") }
                        inbox[index] += scratch[..<n]
                    }
                    // Advance through the steps whose markers have arrived.
                    while stepOf[index] < steps.count, contains(inbox[index], steps[stepOf[index]].until) {
                        inbox[index] = []
                        stepOf[index] += 1
                        if stepOf[index] < steps.count {
                            try send(steps[stepOf[index]].send, to: fd)
                        } else {
                            // Done: idle from now on (later server pings wait in the socket).
                            epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
                            finished += 1
                        }
                    }
                }
            }
        } catch {
            for fd in fds where fd >= 0 { Glibc.close(fd) }
            throw error
        }
        return Held(fds: fds)
    }

    /// A non-blocking connect from 127.0.0.(2 + index / perSourceAddress), registered for writability.
    private static func connect(index: Int, port: UInt16, epoll: Int32) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SyncBenchError("raw client: socket failed (errno \(errno)) at connection \(index)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_IP), 24 /* IP_BIND_ADDRESS_NO_PORT */, &one, socklen_t(MemoryLayout<Int32>.size))
        var source = sockaddr_in()
        source.sin_family = sa_family_t(AF_INET)
        source.sin_addr.s_addr = (UInt32(0x7F00_0002) + UInt32(index / perSourceAddress)).bigEndian
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        target.sin_port = port.bigEndian
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &source) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        let connected = withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) } }
        guard bound == 0, connected == 0 || errno == EINPROGRESS else {
            let code = errno
            Glibc.close(fd)
            throw SyncBenchError("raw client: bind/connect failed (errno \(code)) at connection \(index)")
        }
        var event = epoll_event(events: EPOLLOUT.rawValue, data: epoll_data_t(u64: UInt64(index)))
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
        return fd
    }

    /// Writes a short message whole (it fits in an empty socket buffer).
    private static func send(_ bytes: [UInt8], to fd: Int32) throws {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw SyncBenchError("raw client: short write (\(n) of \(bytes.count), errno \(errno))") }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
