import Contrail
@testable import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// `/metrics` (issue 28): the Prometheus text format, checked by a strict parser (and by a real
/// Prometheus in ``PrometheusScrapeTests`` where the Debian package is installed), counting what
/// really happened; behind the admin credential when authentication is on.
@MainActor
@Suite struct MetricsTests {
    /// Every family the issue asks for, on a server alone.
    static let required = [
        "contrail_sessions_open", "contrail_sessions_created_total", "contrail_sessions_resumed_total",
        "contrail_sessions_closed_total", "contrail_scopes_loaded", "contrail_change_sets_total", "contrail_fragments_total",
        "contrail_fanout_messages_total", "contrail_resend_buffer_bytes", "contrail_fsync_seconds",
        "contrail_group_commit_seconds", "contrail_process_resident_memory_bytes", "contrail_process_open_fds",
    ]

    /// Scrapes `/metrics` and parses it strictly.
    static func scrape(_ port: UInt16, token: String? = nil) async throws -> PrometheusText {
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let response = try await PagesHTTP.request(port: port, path: "/metrics", extraHeaders: auth)
        guard response.status == 200 else { throw TestFailure("GET /metrics: \(response.status)") }
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        return try PrometheusText(parsing: response.text)
    }

    @Test func metricsParseStrictlyAndCountSessionsChangeSetsAndTheDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-metrics-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (server, port) = try await startPageServer { @Sendable options in
            options.servesMetrics = true
            options.dataDirectory = directory
            options.maxFragmentsPerMessage = 5
        }
        let before = try await Self.scrape(port)
        for name in Self.required { #expect(before.family(name) != nil, "\(name) missing") }
        #expect(before.value("contrail_sessions_created_total") == 0)
        #expect(before.value("contrail_ready") == 1)

        let url = "ws://127.0.0.1:\(port)/"
        let (writerScope, writerBoard) = Self.boardScope()
        let writer = try await Client.sync(writerScope, url: url)
        let (readerScope, readerBoard) = Self.boardScope()
        let reader = try await Client.sync(readerScope, url: url)
        for score in 1...3 {
            let changeSet = writerScope.modify { writerBoard.score = score }
            #expect(await changeSet?.settled() == .completed)
        }
        // A change set over the fragment limit is refused by the client before sending; one the
        // server rejects: more fragments than it takes, sent raw.
        #expect(await eventually { readerBoard.score == 3 })
        let raw = try await Self.sendOversizedSync(port: port, fragments: 6)

        let after = try await Self.scrape(port)
        #expect(after.value("contrail_sessions_created_total") == 3)
        #expect(after.value("contrail_sessions_open") == 3)
        #expect(after.value("contrail_change_sets_total", ["result": "accepted"]) ?? 0 >= 3)
        #expect(after.value("contrail_change_sets_total", ["result": "rejected"]) == 1)
        #expect(after.value("contrail_fragments_total", ["result": "rejected"]) == 6)
        #expect(after.value("contrail_fanout_messages_total") ?? 0 >= 3, "each change went to the reader")
        #expect(after.value("contrail_scopes_loaded") == 1)
        #expect(after.value("contrail_fsync_seconds_count") ?? 0 >= 3)
        #expect(after.value("contrail_group_commit_seconds_count") ?? 0 >= 3)
        #expect(after.value("contrail_process_resident_memory_bytes") ?? 0 > 1_000_000)
        #expect(after.value("contrail_process_open_fds") ?? 0 > 3)
        #expect(after.family("contrail_nats_publish_seconds") == nil, "cluster metrics only in cluster mode")
        _ = readerBoard
        await raw.close()
        await writer.close()
        await reader.close()
        await server.stop()
    }

    @Test func metricsTakeAnAdminTokenWhenAuthenticationIsOn() async throws {
        let (server, port) = try await startPageServer { @Sendable options in
            options.servesMetrics = true
            options.sessionHook = { params, _ in
                switch params["token"]?.stringValue {
                case "admin": .allow(SessionIdentity(user: "root", isAdmin: true))
                case "user": .allow(SessionIdentity(user: "ann"))
                default: .deny()
                }
            }
        }
        #expect(try await PagesHTTP.request(port: port, path: "/metrics").status == 401)
        #expect(try await PagesHTTP.request(port: port, path: "/metrics", extraHeaders: "Authorization: Bearer user\r\n").status == 403)
        #expect(try await PagesHTTP.request(port: port, path: "/metrics", extraHeaders: "Authorization: Bearer nope\r\n").status == 403)
        // Positive control: the admin's token.
        let text = try await Self.scrape(port, token: "admin")
        #expect(text.value("contrail_ready") == 1)
        // Health stays open: it says nothing but ready or not.
        #expect(try await PagesHTTP.request(port: port, path: "/readyz").status == 200)
        await server.stop()
    }

    @Test func metricsAreServedOnlyWhenAskedForAndHealthAlways() async throws {
        let (server, port) = try await startPageServer { @Sendable options in options.servesPages = false }
        #expect(try await PagesHTTP.request(port: port, path: "/metrics").status == 400, "not served: not an upgrade")
        #expect(try await PagesHTTP.request(port: port, path: "/").status == 400, "pages off")
        let (withPages, pagesPort) = try await startPageServer()
        #expect(try await PagesHTTP.request(port: pagesPort, path: "/metrics").status == 404, "pages on, metrics off")
        await withPages.stop()
        let health = try await PagesHTTP.request(port: port, path: "/healthz")
        #expect(health.status == 200 && health.text == "ok\n")
        #expect(try await PagesHTTP.request(port: port, path: "/readyz").text == "ready\n")
        #expect(try await PagesHTTP.request(port: port, method: "POST", path: "/readyz").status == 405)
        await server.stop()
    }

    @Test func histogramsAreCumulativeAndEndAtTheirCount() throws {
        let histogram = MetricsHistogram(bounds: [0.001, 0.01])
        histogram.observe(.microseconds(500))
        histogram.observe(.milliseconds(5))
        histogram.observe(.milliseconds(5))
        histogram.observe(.seconds(3))
        let snapshot = histogram.snapshot()
        #expect(snapshot.cumulative.map(\.count) == [1, 3])
        #expect(snapshot.count == 4)
        #expect(abs(snapshot.sum - 3.0105) < 1e-9)
        var text = MetricsText()
        text.histogram("contrail_test_seconds", help: "A test \\ with \"quotes\".", snapshot)
        text.counter("contrail_things_total", help: "Things.", label: "kind", [("a\"b\\c\nd", 2)])
        let parsed = try PrometheusText(parsing: text.text)
        #expect(parsed.value("contrail_test_seconds_bucket", ["le": "+Inf"]) == 4)
        #expect(parsed.value("contrail_things_total", ["kind": "a\"b\\c\nd"]) == 2, "label values round-trip their escapes")
    }

    @Test func theStrictParserRefusesWhatAScraperWould() {
        let good = "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
        #expect((try? PrometheusText(parsing: good)) != nil, "positive control")
        let bad = [
            "# TYPE a_total counter\na_total 1",                                    // no final line feed
            "# TYPE a_total counter\na_total -1\n",                                 // negative counter
            "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n",                      // interleaved families
            "# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n",                         // a series twice
            "# TYPE a gauge\na{x=1} 1\n",                                           // unquoted label value
            "# TYPE a gauge\na{x=\"\\t\"} 1\n",                                     // bad escape
            "# TYPE a gauge\na one\n",                                              // bad value
            "# TYPE 1a gauge\n1a 1\n",                                              // bad name
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",   // falling buckets
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",       // no +Inf
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",    // +Inf differs from count
            "a 1\n# TYPE a gauge\n",                                                // TYPE after samples
        ]
        for text in bad { #expect((try? PrometheusText(parsing: text)) == nil, "accepted: \(text.debugDescription)") }
    }

    /// A raw session that fetches the board and sends a ScopeSync of `fragments` changes (over the
    /// server's limit of 5): every fragment rejected. Returns once the reply came.
    nonisolated static func sendOversizedSync(port: UInt16, fragments: Int) async throws -> WebSocketConnection {
        let connection = try await WebSocketConnection.connect(to: "ws://127.0.0.1:\(port)/")
        var messages = connection.messages.makeAsyncIterator()
        func next(_ type: String) async throws {
            while case .text(let text)? = try await messages.next() {
                let frame = try JSON(parsing: text)
                if frame.arrayValue?.contains(where: { $0["type"]?.stringValue == type }) == true { return }
            }
            throw TestFailure("no \(type)")
        }
        try await connection.send(.text(#"{"type":"SessionCreate","index":0,"version":"0.2.0","params":{}}"#))
        try await next("SessionCreateReply")
        try await connection.send(.text(#"[{"type":"ScopeFetch","index":1,"name":"MetricsBoard","params":{}}]"#))
        try await next("ScopeState")
        let uuid = UUID().uuidString.lowercased()
        let changes = (0..<fragments).map { _ in #"{"type":"change","uuid":"\#(uuid)","clsName":"Board","properties":{"score":1}}"# }
        try await connection.send(.text(#"[{"type":"ScopeSync","index":2,"scopeIndex":0,"fragments":[\#(changes.joined(separator: ","))]}]"#))
        try await next("ScopeSyncReply")
        return connection
    }

    static func boardScope() -> (Scope, Board) {
        let scope = Scope(name: "MetricsBoard")
        let board = Board()
        scope.root = board
        return (scope, board)
    }
}

/// Readiness (`/readyz`) through a server's phases, and cut off from NATS.
@Suite struct ReadinessTests {
    @Test func readyOnlyWhileServing() async {
        var options = ServerOptions()
        options.log = nil
        let core = ServerCore(options: options)
        let health = HealthEndpoint(core: core)
        #expect(await health.notReady() == "starting")
        #expect(await health.respond(ready: true).status == 503)
        #expect(await health.respond(ready: false).status == 200, "alive while starting")
        #expect(core.advance(.started))
        #expect(await health.notReady() == nil)
        #expect(await health.respond(ready: true).status == 200)
        #expect(core.advance(.drain))
        #expect(!core.advance(.drain), "a second drain changes nothing")
        #expect(await health.notReady() == "draining")
        let response = await health.respond(ready: true)
        #expect(response.status == 503 && String(decoding: response.body, as: UTF8.self) == "not ready: draining\n")
        _ = core.stopAll()
        #expect(await health.notReady() == "stopped")
    }

    @Test func everyPhaseEventPairIsDecided() {
        for state in [ServerPhase.State.starting, .serving, .draining, .stopped] {
            for event in [ServerPhase.Event.started, .drain, .stop] {
                let next = ServerPhase.transition(from: state, on: event)
                #expect(next != nil)
                // The phases only move forward.
                let order: [ServerPhase.State] = [.starting, .serving, .draining, .stopped]
                if let (to, _) = next { #expect(order.firstIndex(of: to)! >= order.firstIndex(of: state)!) }
            }
        }
    }
}
