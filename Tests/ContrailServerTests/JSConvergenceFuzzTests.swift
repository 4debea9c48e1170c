import Foundation
import Testing

/// The JavaScript client's convergence fuzzer (Tests/JS/fuzz/convergence.mjs) on a few seeds: 2–4
/// contrail.js clients under Node and a Swift client (`contrail fuzz peer`) on one scope of a child
/// `contrail serve`, with cut connections, rejected edits and atomic change sets; every replica must
/// end equal to a fresh fetch and no acknowledged insert may be lost. Longer campaigns run by hand
/// (README, "In the browser").
@Suite struct JSConvergenceFuzzTests {
    static let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "JS/fuzz/convergence.mjs")

    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run the JS fuzzer"),
          .enabled("needs Node.js with a WebSocket (Node 22, or Node 20 with --experimental-websocket)") { await PagesNodeTests.webSocketFlags() != nil })
    func javaScriptAndSwiftClientsConvergeOnEightSeeds() async throws {
        let node = try #require(PagesNodeTests.node)
        let flags = try #require(await PagesNodeTests.webSocketFlags())
        let contrail = try ServerProcess.executable.path(percentEncoded: false)
        let result = try await runChild(node, flags + [Self.script.path, "--contrail", contrail, "--seeds", "8", "--start", "1", "--parallel", "4"],
                                        timeout: .seconds(300))
        #expect(!result.timedOut, "the fuzzer was killed after 300 s:\n\(result.output)")
        #expect(result.status == 0, "the fuzzer failed:\n\(result.output)")
        #expect(result.output.split(separator: "\n").contains("8 passed, 0 failed"), "\(result.output)")
    }

    @Test(.enabled(if: PagesNodeTests.node != nil, "needs Node.js (`node` on PATH) to run the JS fuzzer"))
    func theFuzzerRefusesToRunWithoutWhatItNeeds() async throws {
        // Negative control for the run above: without the contrail executable it reports and fails
        // instead of passing on nothing.
        let node = try #require(PagesNodeTests.node)
        let flags = await PagesNodeTests.webSocketFlags() ?? []
        let result = try await runChild(node, flags + [Self.script.path, "--seeds", "1"], timeout: .seconds(60))
        #expect(result.status == 2, "\(result.output)")
        #expect(result.output.contains("needs"), "\(result.output)")
    }
}
