import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A real Prometheus (Debian's `prometheus`) scrapes `/metrics` of a server with authentication on,
/// with the admin token in its configuration: the target must be up with no scrape error (the Go
/// parser refuses malformed text), and a query must return what the server counted.
@MainActor
@Suite(.disabled(if: executableOnPath("prometheus") == nil, "prometheus is not installed (apt-get install prometheus)"),
       .timeLimit(.minutes(3)))
struct PrometheusScrapeTests {
    /// A free loopback port (bound and released; Prometheus takes it a moment later).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestFailure("bind() failed") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// `GET path` from Prometheus's HTTP API, parsed as JSON (the body de-chunked if need be).
    static func api(_ port: UInt16, _ path: String) async throws -> JSON {
        let response = try await PagesHTTP.request(port: port, path: path, extraHeaders: "Connection: close\r\n")
        guard response.status == 200 else { throw TestFailure("GET \(path): \(response.status)") }
        var body = response.body
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var plain: [UInt8] = []
            var index = 0
            while let end = body[index...].firstIndex(of: 13), let size = Int(String(decoding: body[index..<end], as: UTF8.self), radix: 16), size > 0 {
                plain += body[(end + 2)..<(end + 2 + size)]
                index = end + 2 + size + 2
            }
            body = plain
        }
        return try JSON(parsing: String(decoding: body, as: UTF8.self))
    }

    @Test func aRealPrometheusScrapesTheMetricsWithTheAdminToken() async throws {
        let (server, port) = try await startPageServer { @Sendable options in
            options.servesMetrics = true
            options.sessionHook = { params, headers in
                JWTVerifier.token(params: params, headers: headers) == "prometheus-admin" ? .allowEverything : .deny()
            }
        }
        let scope = Scope(name: "Scraped")
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, url: "ws://127.0.0.1:\(port)/", options: ClientOptions(sessionParams: ["token": "prometheus-admin"]))
        let changeSet = scope.modify { board.score = 1 }
        #expect(await changeSet?.settled() == .completed)

        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-prometheus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = directory.appending(path: "prometheus.yml")
        try """
        global: { scrape_interval: 1s, scrape_timeout: 1s }
        scrape_configs:
          - job_name: contrail
            authorization: { credentials: prometheus-admin }
            static_configs: [{ targets: ["127.0.0.1:\(port)"] }]
        """.write(to: configuration, atomically: true, encoding: .utf8)
        let webPort = try Self.freePort()
        let (executable, arguments) = politely(executableOnPath("prometheus") ?? "prometheus", [
            "--config.file=\(configuration.path(percentEncoded: false))",
            "--storage.tsdb.path=\(directory.appending(path: "data").path(percentEncoded: false))",
            "--web.listen-address=127.0.0.1:\(webPort)",
        ])
        let prometheus = try ChildProcess(executable, arguments, output: false)
        defer { prometheus.signal(SIGKILL) }

        var health = ""
        var lastError = ""
        let up = await eventually(.seconds(90)) {
            guard let targets = try? await Self.api(webPort, "/api/v1/targets"),
                  let target = targets["data"]?["activeTargets"]?[0] else { return false }
            health = target["health"]?.stringValue ?? ""
            lastError = target["lastError"]?.stringValue ?? ""
            return health == "up"
        }
        #expect(up, "target health '\(health)', last error '\(lastError)'; prometheus said: \(prometheus.text.suffix(2000))")
        #expect(lastError.isEmpty)
        var created: String?
        let queried = await eventually(.seconds(60)) {
            let result = try? await Self.api(webPort, "/api/v1/query?query=contrail_sessions_created_total")
            created = result?["data"]?["result"]?[0]?["value"]?[1]?.stringValue
            return created != nil
        }
        #expect(queried && created == "1", "contrail_sessions_created_total as Prometheus stored it: \(created ?? "nothing")")
        let accepted = try await Self.api(webPort, "/api/v1/query?query=contrail_change_sets_total%7Bresult%3D%22accepted%22%7D")
        #expect(accepted["data"]?["result"]?[0]?["value"]?[1]?.stringValue == "1")
        await client.close()
        await server.stop()
    }
}
