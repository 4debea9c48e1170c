import Contrail
import ContrailNATS
import ContrailServer
import Foundation

/// `contrail bench cluster`: what sharing scopes through NATS JetStream costs, against a
/// `nats-server -js` this benchmark starts on a free loopback port (it must be installed).
///
/// - `cluster.append`: µs per change set appended to the log (a JetStream publish with
///   `Nats-Msg-Id` and an expected last subject sequence, awaited ack), as a ratio to a core NATS
///   request/reply round trip on the same connection: the price of the durable log.
/// - `cluster.latency.p50/p99.sN`: from a change in a client on the first of N Contrail servers
///   (in this process) to the observer firing in a client on the last one, as a ratio to the same
///   two clients on one server without NATS, measured in the same run.
/// - `cluster.fanout.c100.sN`: fragments per second that one client's change sets reach 99 others
///   spread over N servers with, as a ratio to the same on one server without NATS.
/// - `cluster.fanout.c100x10.sN`: the same with 100 clients on 10 scopes (one sender and 9
///   receivers each, all sending at once), each scope's clients on the one server a load balancer
///   hashing the URL's `?scope=` picks (scope affinity, the deployment README's "Running a
///   cluster" describes), as a ratio to 100 clients on 10 scopes of one server without NATS.
/// - `cluster.cpu.c100x10.sN`: CPU µs all N servers used per change set in that run (from
///   `/proc/<pid>/stat`), against the server without NATS: what N machines would each spend.
/// - `cluster.cpu.clients.c100x10.sN`: CPU µs of this process (the 100 clients) per change set in
///   that run, against the same with the server without NATS; `cluster.cpu.nats.c100x10.sN`: CPU µs
///   of `nats-server`, against the Contrail servers' (what shares the machine's cores with them).
/// - `cluster.fanout.c300x30.s3`, `cluster.cpu.c300x30.s3`, `cluster.cpu.clients.c300x30.s3`,
///   `cluster.cpu.nats.c300x30.s3`, `cluster.switches.c300x30.s3`: three servers with affinity,
///   300 clients on 30 scopes (each server about the load the one server had), against the
///   one-server affinity run: the CPU per change set N machines with N times the clients would
///   spend (on this 2-core machine, with everything else on the same cores).
/// - `cluster.switches.c100x10.sN`: context switches of all N servers' threads per change set in
///   that run (`/proc/<pid>/task/*/status`), against the server without NATS: how well each
///   wake-up of a server is amortised over change sets.
/// - `cluster.spread.c100x10.sN`, `cluster.spread.cpu.c100x10.sN`: the same two with each scope's
///   clients spread round-robin over the servers (a proxy that does not route by scope: every
///   server serves every scope, the worst case), against the same baselines.
/// - `cluster.batch.c100x10.sN`: change sets per log message in the affinity run (group commit),
///   against 1.
/// - `cluster.log.c100x10.sN`: µs of log append per change set, the batch amortised
///   (`cluster.append` × messages / change sets), against `cluster.append`.
///
/// Every server of the fan-out figures, and the server without NATS they are compared with, is a
/// `contrail serve` child (N servers are N processes, as on N machines); the clients are in this
/// process. The latency figures use servers in this process.
/// - `cluster.cpu.serving` / `cluster.cpu.idle`: CPU µs per change set of a scope in a `contrail
///   serve` child whose session is subscribed to it, and in one whose session fetched it earlier
///   and detached (it has unloaded the scope), against the serving one.
///
/// `--only affinity` runs `cluster.append` and the ten-scope figures with scope affinity alone (to
/// profile the servers: `perf record -p` on each `contrail serve --nats` child).
@MainActor
enum ClusterBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let nats = try await LocalNATS.start()
        defer { nats.stop() }
        var figures = [try await append(nats.url, count: options.iterations(2000, smoke: 5))]
        // `--only affinity`: the ten-scope runs with scope affinity alone (for profiling them).
        let affinityOnly = options.only == "affinity"
        if !affinityOnly { figures += try await latencyAndOneScope(nats: nats.url, options) }
        let scopeChangeSets = options.iterations(1000, smoke: 3)
        let alone10 = try await withChildren(1, arguments: []) { children in
            try await fanoutOnScopes(children, routing: .affinity, changeSets: scopeChangeSets)
        }
        let appendMicros = figures[0].value
        let probe = try await NATSConnection.connect(nats.url)
        let stream = JetStream(connection: probe)
        var oneServer: ScopesRun?
        for servers in 1...3 {
            let before = (try? await stream.streamInfo("CONTRAIL_SCOPES"))?.state.lastSeq ?? 0
            let routed = try await withChildren(servers, arguments: ["--nats", nats.url.description]) { children in
                try await fanoutOnScopes(children, routing: .affinity, changeSets: scopeChangeSets, nats: nats.process)
            }
            if servers == 1 { oneServer = routed }
            let geneses: UInt64 = servers == 1 ? 10 : 0  // the scopes' first messages, in the first run
            let messages = Double(try await stream.streamInfo("CONTRAIL_SCOPES").state.lastSeq - before - geneses)
            let perMessage = Double(scopeChangeSets * 10) / max(messages, 1)
            figures += routed.figures("c100x10.s\(servers)", against: alone10)
            figures.append(BenchFigure(name: "cluster.batch.c100x10.s\(servers)", value: perMessage, unit: "changesets/msg", baseline: 1))
            figures.append(BenchFigure(name: "cluster.log.c100x10.s\(servers)", value: appendMicros / perMessage, unit: "us",
                                       baseline: appendMicros))
            guard servers > 1, !affinityOnly else { continue }  // one server: the same deployment as above
            let spread = try await withChildren(servers, arguments: ["--nats", nats.url.description]) { children in
                try await fanoutOnScopes(children, routing: .roundRobin, changeSets: scopeChangeSets)
            }
            figures.append(BenchFigure(name: "cluster.spread.c100x10.s\(servers)", value: spread.rate, unit: "frag/s", baseline: alone10.rate))
            figures.append(BenchFigure(name: "cluster.spread.cpu.c100x10.s\(servers)", value: spread.cpuMicros, unit: "us",
                                       baseline: alone10.cpuMicros))
        }
        await probe.close()
        // Three servers each with the load one server had: what N machines with N times the clients do.
        if let oneServer {
            let tripled = try await withChildren(3, arguments: ["--nats", nats.url.description]) { children in
                try await fanoutOnScopes(children, scopes: 30, routing: .affinity, changeSets: scopeChangeSets, nats: nats.process)
            }
            figures += tripled.figures("c300x30.s3", against: oneServer)
        }
        if !affinityOnly { figures += try await cpu(nats: nats.url, changeSets: options.iterations(2000, smoke: 5)) }
        return figures
    }

    /// `cluster.latency.*` (servers in this process) and `cluster.fanout.c100.sN` (one scope).
    static func latencyAndOneScope(nats: NATSServerURL, _ options: BenchOptions) async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        let rounds = options.iterations(300, smoke: 3)
        let alone = try await SyncBench.latency(clients: 2, rounds: rounds)
        for servers in 1...3 {
            let samples = try await latency(servers: servers, nats: nats, rounds: rounds)
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                figures.append(BenchFigure(name: "cluster.latency.\(label).s\(servers)",
                                           value: Stopwatch.percentile(samples, p) * 1e6, unit: "us",
                                           baseline: Stopwatch.percentile(alone, p) * 1e6))
            }
        }
        let changeSets = options.iterations(200, smoke: 3)
        let single = try await withChildren(1, arguments: []) { children in
            try await SyncBench.fanout(try await SyncBench.replicas(100, port: children[0].port), changeSets: changeSets)
        }
        for servers in 1...3 {
            let rate = try await withChildren(servers, arguments: ["--nats", nats.description]) { children in
                var replicas: [SyncBench.Replica] = []
                for index in 0..<100 { replicas += try await SyncBench.replicas(1, port: children[index % children.count].port) }
                return try await SyncBench.fanout(replicas, changeSets: changeSets)
            }
            figures.append(BenchFigure(name: "cluster.fanout.c100.s\(servers)", value: rate, unit: "frag/s", baseline: single))
        }
        return figures
    }

    /// CPU µs per change set in a `contrail serve` child serving the scope and in one that served
    /// it earlier and has unloaded it (its session detached; `--scope-idle 0.2`).
    static func cpu(nats: NATSServerURL, changeSets: Int) async throws -> [BenchFigure] {
        let arguments = ["--nats", nats.description, "--scope-idle", "0.2"]
        let serving = try await ServeChild.start(arguments)
        defer { serving.stop() }
        let idle = try await ServeChild.start(arguments)
        defer { idle.stop() }
        return try await withServers(1, nats: nats) { servers in
            let writer = try await SyncBench.replicas(1, port: try await servers[0].start(), scope: "cpu")[0]
            let reader = try await SyncBench.replicas(1, port: serving.port, scope: "cpu")[0]
            // The idle server loads the scope, then its session detaches and it unloads it.
            let visitor = try await SyncBench.replicas(1, port: idle.port, scope: "cpu")[0]
            _ = try await visitor.client.session?.detach(visitor.scope)
            try await Task.sleep(for: .seconds(2))  // a benchmark: let its idle timeout (0.2 s) pass
            let arrivals = SyncArrivals()
            let target = writer.board.score + changeSets
            let token = try reader.board.observeChangeImmediately(arrivals, \BenchBoard.score) {
                if reader.board.score == target { arrivals.arrived() }
            }
            let (servingBefore, idleBefore) = (try serving.cpuSeconds(), try idle.cpuSeconds())
            arrivals.expect(1)
            for _ in 0..<changeSets {
                writer.board.score += 1
                writer.scope.flush()
            }
            try await arrivals.wait(timeout: .seconds(120))
            let servingMicros = (try serving.cpuSeconds() - servingBefore) / Double(changeSets) * 1e6
            let idleMicros = (try idle.cpuSeconds() - idleBefore) / Double(changeSets) * 1e6
            token.cancel()
            for replica in [writer, reader, visitor] { await replica.client.close() }
            return [BenchFigure(name: "cluster.cpu.serving", value: servingMicros, unit: "us", baseline: servingMicros),
                    BenchFigure(name: "cluster.cpu.idle", value: idleMicros, unit: "us", baseline: servingMicros)]
        }
    }

    /// How the clients of one scope are placed on the servers.
    enum Routing {
        /// All on the server a stable hash of the scope name picks (what a load balancer hashing
        /// the URL's `?scope=` does).
        case affinity
        /// Round-robin over all servers, whatever the scope (a load balancer that ignores it).
        case roundRobin
    }

    /// 10 clients on each of `scopes` scopes, on the `children` as `routing` says, every URL carrying
    /// `?scope=`: fragments per second that each scope's sender reaches its 9 others with, all
    /// senders at once, and the CPU µs all the children used meanwhile per change set sent.
    static func fanoutOnScopes(_ children: [ServeChild], scopes: Int = 10, routing: Routing, changeSets: Int,
                               nats: Process? = nil) async throws -> ScopesRun {
        var groups: [[SyncBench.Replica]] = []
        var next = 0
        for scope in 0..<scopes {
            let name = "bench-\(scope)"
            var group: [SyncBench.Replica] = []
            for _ in 0..<10 {
                let server = routing == .affinity ? serverIndex(for: name, of: children.count) : next % children.count
                group += try await SyncBench.replicas(1, port: children[server].port, scope: name, routed: true)
                next += 1
            }
            groups.append(group)
        }
        let natsPID = nats.map { "\($0.processIdentifier)" }
        let before = try children.reduce(0) { $0 + (try $1.cpuSeconds()) }
        let switchesBefore = try children.reduce(0) { $0 + (try $1.contextSwitches()) }
        let (clientsBefore, natsBefore) = (try ServeChild.cpuSeconds(of: "self"), try natsPID.map(ServeChild.cpuSeconds(of:)) ?? 0)
        let rate = try await SyncBench.fanout(groups: groups, changeSets: changeSets)
        let used = try children.reduce(0) { $0 + (try $1.cpuSeconds()) } - before
        let switches = try children.reduce(0) { $0 + (try $1.contextSwitches()) } - switchesBefore
        let clients = try ServeChild.cpuSeconds(of: "self") - clientsBefore
        let natsUsed = try natsPID.map(ServeChild.cpuSeconds(of:)).map { $0 - natsBefore } ?? 0
        let perChangeSet = 1e6 / Double(changeSets * groups.count)
        return ScopesRun(rate: rate, cpuMicros: used * perChangeSet, clientMicros: clients * perChangeSet, natsMicros: natsUsed * perChangeSet,
                         switches: Double(switches) / Double(changeSets * groups.count))
    }

    /// What one run of ``fanoutOnScopes(_:scopes:routing:changeSets:nats:)`` measured: fragments
    /// per second, and CPU µs per change set sent of all the servers, of this process (the clients;
    /// `fanout` closes them, so their teardown too) and of `nats-server`.
    struct ScopesRun {
        let rate: Double
        let cpuMicros: Double
        let clientMicros: Double
        let natsMicros: Double
        /// Context switches of all the servers' threads per change set.
        let switches: Double

        /// `cluster.fanout.NAME`, `cluster.cpu.NAME`, `cluster.cpu.clients.NAME` and
        /// `cluster.switches.NAME` against `baseline`'s, and `cluster.cpu.nats.NAME` against the servers'.
        func figures(_ name: String, against baseline: ScopesRun) -> [BenchFigure] {
            [BenchFigure(name: "cluster.fanout.\(name)", value: rate, unit: "frag/s", baseline: baseline.rate),
             BenchFigure(name: "cluster.cpu.\(name)", value: cpuMicros, unit: "us", baseline: baseline.cpuMicros),
             BenchFigure(name: "cluster.cpu.clients.\(name)", value: clientMicros, unit: "us", baseline: baseline.clientMicros),
             BenchFigure(name: "cluster.cpu.nats.\(name)", value: natsMicros, unit: "us", baseline: cpuMicros),
             BenchFigure(name: "cluster.switches.\(name)", value: switches, unit: "/changeset", baseline: baseline.switches)]
        }
    }

    /// The server (of `count`) a load balancer hashing the scope name sends its clients to: FNV-1a
    /// (64-bit) of the name's UTF-8 modulo `count`, a stand-in for nginx's `hash` or HAProxy's
    /// `balance url_param`. O(name).
    static func serverIndex(for scope: String, of count: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in scope.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(count))
    }

    /// Runs `body` with `count` `contrail serve` children started with `arguments`, stopping them
    /// afterwards.
    static func withChildren<T>(_ count: Int, arguments: [String], _ body: ([ServeChild]) async throws -> T) async throws -> T {
        var children: [ServeChild] = []
        defer { for child in children { child.stop() } }
        for _ in 0..<count { children.append(try await ServeChild.start(arguments)) }
        return try await body(children)
    }

    /// Runs `body` with `count` cluster servers over `nats`, stopping them afterwards.
    static func withServers<T>(_ count: Int, nats: NATSServerURL,
                               _ body: ([ContrailServer]) async throws -> T) async throws -> T {
        var options = ServerOptions()
        options.log = nil
        options.cluster = ClusterOptions(servers: [nats])
        var servers: [ContrailServer] = []
        for _ in 0..<count { servers.append(try ContrailServer(options: options)) }
        do {
            let result = try await body(servers)
            for server in servers { await server.stop() }
            return result
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
    }

    /// Mean µs of an acknowledged, chained append; baseline: a core request/reply round trip.
    static func append(_ url: NATSServerURL, count: Int) async throws -> BenchFigure {
        let connection = try await NATSConnection.connect(url)
        let jetStream = JetStream(connection: connection)
        _ = try await jetStream.createStream(StreamConfig(name: "BENCH", subjects: ["bench.>"]))
        let payload = Array(SyncBench.sampleFrame().utf8)
        var last: UInt64 = 0
        let start = ContinuousClock.now
        for index in 0..<count {
            let ack = try await jetStream.publish("bench.scope", payload: payload, messageID: "m\(index)",
                                                  expectedLastSubjectSequence: last)
            last = ack.seq
        }
        let appendSeconds = Stopwatch.seconds(ContinuousClock.now - start)
        guard try await jetStream.streamInfo("BENCH").state.messages == UInt64(count) else {
            throw SyncBenchError("cluster bench: the stream does not hold every appended message")
        }
        let echo = try await connection.subscribe("echo")
        let responder = Task {
            for await message in echo.messages {
                if let reply = message.replyTo { try? await connection.publish(reply, payload: message.payload) }
            }
        }
        let roundTrips = ContinuousClock.now
        for _ in 0..<count { _ = try await connection.request("echo", payload: payload) }
        let requestSeconds = Stopwatch.seconds(ContinuousClock.now - roundTrips)
        responder.cancel()
        await connection.close()
        return BenchFigure(name: "cluster.append", value: appendSeconds / Double(count) * 1e6, unit: "us",
                           baseline: requestSeconds / Double(count) * 1e6)
    }

    /// Seconds from a change on the first server's client to its arrival on the last server's client.
    static func latency(servers count: Int, nats: NATSServerURL, rounds: Int) async throws -> [Double] {
        try await withServers(count, nats: nats) { servers in
            let writer = try await SyncBench.replicas(1, port: try await servers[0].start())[0]
            let reader = try await SyncBench.replicas(1, port: try await servers[count - 1].start())[0]
            let arrivals = SyncArrivals()
            let token = try reader.board.observeChange(arrivals, \BenchBoard.score) { arrivals.arrived() }
            var samples: [Double] = []
            for _ in 0..<rounds {
                arrivals.expect(1)
                writer.board.score += 1
                try await arrivals.wait(timeout: .seconds(30))
                samples += arrivals.latencies
            }
            token.cancel()
            await writer.client.close()
            await reader.client.close()
            return samples
        }
    }
}

/// A `nats-server -js` child on a free loopback port with a temporary store, for the benchmark.
private struct LocalNATS {
    let process: Process
    let url: NATSServerURL
    let store: URL

    /// Starts it and waits (up to 10 s) until it accepts a connection.
    static func start() async throws -> LocalNATS {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/usr/bin:/usr/local/bin"
        guard let binary = path.split(separator: ":").map({ "\($0)/nats-server" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw SyncBenchError("contrail bench cluster needs nats-server (apt-get install nats-server)")
        }
        let port = try freePort()
        let store = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-nats-\(UUID().uuidString)")
        let process = Process()
        process.executableURL = URL(filePath: binary)
        process.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store.path(percentEncoded: false)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = LocalNATS(process: process, url: NATSServerURL(host: "127.0.0.1", port: port), store: store)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let probe = try? await NATSConnection.connect(server.url) {
                await probe.close()
                return server
            }
            try await Task.sleep(for: .milliseconds(20))  // polling the child's startup, bounded
        }
        server.stop()
        throw SyncBenchError("nats-server did not start on port \(port)")
    }

    func stop() {
        process.terminate()
        try? FileManager.default.removeItem(at: store)
    }

    /// A loopback port nobody listens on (the kernel's pick for a socket bound to port 0).
    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else { throw SyncBenchError("no free port for nats-server") }
        return UInt16(bigEndian: address.sin_port)
    }
}
