import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A root with a shared counter, for `JSCounterAgreementTests`.
final class CounterBoard: ModelObject {
    @Property var likes = SharedCounter()
}

/// contrail-counter.js and Swift's `SharedCounter` (Protocol §8.21) on one real server: a Node client
/// and a Swift client add random deltas at the same time, and both, and the server, end with the
/// initial total plus every delta of both (no increment lost to a concurrent one).
@MainActor @Suite struct JSCounterAgreementTests {
    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run contrail-counter.js"),
          .enabled("needs Node.js with a WebSocket (Node 22, or Node 20 with --experimental-websocket)") {
              await PagesNodeTests.webSocketFlags() != nil
          })
    func javaScriptAndSwiftIncrementsAllCount() async throws {
        let node = try #require(PagesNodeTests.node)
        let flags = try #require(await PagesNodeTests.webSocketFlags())
        ModelRegistry.register(CounterBoard.self)
        let (server, port) = try await startPageServer()
        let name = "Counter-\(UUID().uuidString.prefix(8))"
        let scope = Scope(name: name)
        let board = CounterBoard()
        scope.root = board
        let client = try await Client.sync(scope, url: "ws://127.0.0.1:\(port)/", options: testOptions())
        board.likes = SharedCounter(5)  // a plain write: sets the total
        #expect(await eventually(.seconds(60)) { client.session?.pendingChangeSets == 0 })

        var random = SplitMix64(seed: 27)
        let fromJS = (0..<60).map { _ in Int64.random(in: -3...5, using: &random) }
        let fromSwift = (0..<60).map { _ in Int64.random(in: -3...5, using: &random) }
        let expected = 5 + fromJS.reduce(0, +) + fromSwift.reduce(0, +)
        let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "JS/counter-agreement.mjs")
        let deltas = "[" + fromJS.map(String.init).joined(separator: ",") + "]"
        let child = Task.detached {
            try await runChild(node, flags + [script.path, "ws://127.0.0.1:\(port)/", name, deltas, "\(expected)"], timeout: .seconds(120))
        }
        // Half of Swift's deltas, then the rest once the Node client's first ones have arrived, so
        // that both add at the same time.
        let swiftFirst = 5 + fromSwift.prefix(30).reduce(0, +)
        for delta in fromSwift.prefix(30) {
            board.likes.add(delta)
            scope.flush()
        }
        #expect(await eventually(.seconds(60)) { client.session?.pendingChangeSets == 0 && board.likes.value != swiftFirst },
                "the Node client's deltas arrive")
        for (index, delta) in fromSwift.dropFirst(30).enumerated() {
            board.likes.add(delta)
            if index % 2 == 0 { scope.flush() }
            await Task.yield()
        }
        let result = try await child.value
        let line = result.output.split(separator: "\n").first { $0.hasPrefix("RESULT ") }
        let report = try JSON(parsing: String(try #require(line, "node printed no result:\n\(result.output)").dropFirst(7)))
        #expect(result.status == 0, "node:\n\(result.output)")
        #expect(report["value"] == .int(expected) && report["plain"] == .int(expected),
                "Node shows \(report), expected \(expected) = 5 + \(fromJS.reduce(0, +)) from Node + \(fromSwift.reduce(0, +)) from Swift")
        #expect(await eventually(.seconds(60)) { client.session?.pendingChangeSets == 0 && board.likes.value == expected },
                "Swift shows \(board.likes.value), expected \(expected)")
        let root = board.uuid.uuidString.lowercased()
        #expect(await server.state(ofScope: name)?["objects"]?[root]?["properties"]?["likes"] == .int(expected))
        await client.close()
        await server.stop()
    }
}
