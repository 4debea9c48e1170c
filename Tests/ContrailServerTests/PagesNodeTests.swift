import Contrail
import ContrailServer
import Foundation
import Testing

/// The JavaScript client's tests under Node's test runner (`node --test`, Tests/JS/*-test.mjs), on the
/// client file in the source tree (Sources/ContrailServer/Pages/Assets/contrail.js, which the server
/// serves byte for byte: PagesAssetTests). Without a server the pure tests run and the server tests are
/// skipped with their reason; with the servers this suite starts, the protocol test (session, fetch,
/// change sets with replies, pending keys, collection merges, atomic rejection, resume with resend,
/// acknowledgements, removal) must leave both replicas equal to the server, and the expiry test must
/// get its edit through a new session.
@Suite struct PagesNodeTests {
    static let node = executableOnPath("node")

    /// Every `*-test.mjs` file in Tests/JS, what `node --test Tests/JS/` runs.
    static func testFiles() throws -> [String] {
        let directory = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS")
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix("-test.mjs") }.sorted().map { directory.appending(path: $0).path }
    }

    /// The variables that point the JS tests at servers, all unset.
    static let noServers: [String: String?] = [
        "CONTRAIL_TEST_URL": nil, "CONTRAIL_TEST_SCOPE": nil, "CONTRAIL_TEST_STATE": nil,
        "CONTRAIL_TEST_EXPIRY_URL": nil, "CONTRAIL_TEST_EXPIRY_SCOPE": nil,
    ]

    @Test(.enabled(if: node != nil, "needs Node.js (`node` on PATH) to run Tests/JS with node --test"))
    func pureTestsRunAndServerTestsSkipWithoutAServer() async throws {
        let node = try #require(Self.node)
        let files = try Self.testFiles()
        #expect(files.count >= 4, "\(files)")
        let result = try await Self.run(node, [], files, environment: Self.noServers)
        let summary = NodeTestSummary(result.output)
        #expect(result.status == 0 && summary.failed == 0, "node --test failed:\n\(result.output)")
        #expect(summary.passed >= 10, "the pure tests ran:\n\(result.output)")
        #expect(summary.skipped == 5, "only the five server tests are skipped:\n\(result.output)")
        for variable in ["CONTRAIL_TEST_URL", "CONTRAIL_TEST_EXPIRY_URL"] {
            #expect(result.output.contains("# SKIP needs a Contrail server") && result.output.contains("set \(variable)="),
                    "the skip says why: \(variable)")
        }
    }

    @Test(.enabled(if: node != nil, "needs Node.js (`node` on PATH) to run Tests/JS with node --test"),
          .enabled("needs Node.js with a WebSocket (Node 22, or Node 20 with --experimental-websocket)") { await webSocketFlags() != nil })
    func javaScriptClientPassesItsTestsAgainstRealServers() async throws {
        let node = try #require(Self.node)
        let flags = try #require(await Self.webSocketFlags())
        // With a data directory: it lists MarkRevision (revision-test.mjs); the expiring one does not.
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, port) = try await startPageServer(pingInterval: .milliseconds(200)) { $0.dataDirectory = data }
        defer { Task { await server.stop() } }
        let (expiring, expiringPort) = try await startPageServer(pingInterval: .milliseconds(200)) { options in
            options.sessionExpiry = .seconds(1)
        }
        defer { Task { await expiring.stop() } }
        let stateFile = FileManager.default.temporaryDirectory.appending(path: "contrail-js-state-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: stateFile) }
        let scope = "NodeCanvas"
        let result = try await Self.run(node, flags, try Self.testFiles(), environment: [
            "CONTRAIL_TEST_URL": "ws://127.0.0.1:\(port)/", "CONTRAIL_TEST_SCOPE": scope, "CONTRAIL_TEST_STATE": stateFile.path,
            "CONTRAIL_TEST_EXPIRY_URL": "ws://127.0.0.1:\(expiringPort)/", "CONTRAIL_TEST_EXPIRY_SCOPE": "Expiring",
        ])
        let summary = NodeTestSummary(result.output)
        #expect(result.status == 0 && summary.failed == 0, "node --test failed:\n\(result.output)")
        #expect(summary.skipped == 0, "no test skipped with servers given:\n\(result.output)")
        for step in ["fetch", "early-edit", "add", "pending-key", "merge-inserts", "atomic", "resume", "ack", "remove"] {
            #expect(summary.passedNames.contains(step), "step \(step):\n\(result.output)")
        }
        #expect(summary.passedNames.contains("the collection merge is Swift's CollectionMerge"))
        #expect(summary.passedNames.contains("a client whose session expired starts a new one and sends its edit"))
        #expect(summary.passedNames.contains("scope.markRevision names the state after the edits made before it"))
        #expect(summary.passedNames.contains("coalesced offline change sets end on the server as they do sent one by one"))
        #expect(summary.passedNames.contains(
            "a batch whose reply was lost goes again under its id in a new session, and the server does not apply it twice"))

        // Both replicas end equal to the server.
        let replicas = try JSON(parsing: String(decoding: try Data(contentsOf: stateFile), as: UTF8.self))
        let serverState = try #require(await server.state(ofScope: scope))
        let expected = comparableState(serverState)
        #expect(comparableState(try #require(replicas["a"])) == expected, "replica a equals the server")
        #expect(comparableState(try #require(replicas["b"])) == expected, "replica b equals the server")
        #expect((expected["objects"]?.objectValue?.count ?? 0) == 3, "root and two shapes remain")

        // The edit made while the session was gone reached the server.
        let state = try #require(await expiring.state(ofScope: "Expiring"))
        let root = try #require(state["root"]?.stringValue)
        #expect(state["objects"]?[root]?["properties"]?["name"] == .string("after-expiry"), "the edit reached the server: \(state.jsonString)")
    }

    @Test(.enabled(if: node != nil, "needs Node.js (`node` on PATH) to check the pages' scripts"))
    func pageScriptsParseAsModules() async throws {
        let node = try #require(Self.node)
        let assets = PagesAssetTests.assets
        let scripts = try FileManager.default.contentsOfDirectory(atPath: assets.path).filter { $0.hasSuffix(".js") }.sorted()
        #expect(Set(["contrail.js", "demo.js", "inspector.js", "contrail-presence.js", "demo-presence.js", "contrail-store.js", "contrail-text.js", "demo-caption.js", "contrail-counter.js", "contrail-collections.js", "contrail-query.js", "demo-list.js"]).isSubset(of: scripts), "\(scripts)")
        for script in scripts {
            let check = try await runChild(node, ["--check", assets.appending(path: script).path], timeout: .seconds(60))
            #expect(check.status == 0, "node --check \(script):\n\(check.output)")
        }
        // Negative control: a syntax error fails the check.
        let broken = FileManager.default.temporaryDirectory.appending(path: "contrail-broken-\(UUID().uuidString).mjs")
        try Data("export const x = ;".utf8).write(to: broken)
        defer { try? FileManager.default.removeItem(at: broken) }
        #expect(try await runChild(node, ["--check", broken.path], timeout: .seconds(60)).status != 0)
    }

    /// The flags that give `node` a global WebSocket (none from Node 22, `--experimental-websocket` on
    /// Node 20), or nil when it has none (Node 18) or there is no node.
    static func webSocketFlags() async -> [String]? {
        guard let node else { return nil }
        for flags in [[], ["--experimental-websocket"]] {
            let probe = try? await runChild(node, flags + ["-e", "process.exit(typeof WebSocket === 'function' ? 0 : 3)"],
                                            timeout: .seconds(30))
            if probe?.status == 0 { return flags }
        }
        return nil
    }

    /// `node <flags> --test --test-reporter=tap <files>`; expects it to finish within 300 s. It takes
    /// about 50 s against ThreadSanitizer servers on a quiet machine, and 100-150 s with the rest of
    /// the suite and a build beside it (load 9): 120 s once cut it off midway.
    static func run(_ node: String, _ flags: [String], _ files: [String], environment: [String: String?]) async throws -> ChildResult {
        let result = try await runChild(node, flags + ["--test", "--test-reporter=tap"] + files, environment: environment,
                                        timeout: .seconds(300))
        #expect(!result.timedOut, "node was killed after 300 s:\n\(result.output)")
        return result
    }
}

/// What `node --test --test-reporter=tap` reports: the summary counts and the names of the tests and
/// subtests that passed (skipped ones excluded).
struct NodeTestSummary {
    var passed = -1, failed = -1, skipped = -1
    var passedNames: Set<String> = []

    init(_ tap: String) {
        for raw in tap.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("ok "), !line.contains(" # SKIP"), let dash = line.range(of: " - ") {
                passedNames.insert(String(line[dash.upperBound...]))
            }
            for (prefix, keyPath) in [("# pass ", \Self.passed), ("# fail ", \Self.failed), ("# skipped ", \Self.skipped)]
            where line.hasPrefix(prefix) {
                self[keyPath: keyPath] = Int(line.dropFirst(prefix.count)) ?? -1
            }
        }
    }
}
