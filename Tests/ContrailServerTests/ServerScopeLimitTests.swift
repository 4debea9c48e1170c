import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Descriptors and scopes (issue 8, item 6): idle scopes close their log files and reopen on use;
/// limits on open scopes per server and scopes per session are answered with an error.
@Suite("Server scope limits")
struct ServerScopeLimitTests {
    private func dataOptions(_ directory: URL) -> ServerOptions {
        var options = Wire.options()
        options.dataDirectory = directory
        return options
    }

    private func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-limits-\(UUID().uuidString)", directoryHint: .isDirectory)
    }

    /// Descriptors of this process open on files in `directory`.
    private func openFiles(in directory: URL) -> Int {
        let prefix = directory.resolvingSymlinksInPath().path(percentEncoded: false)
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))?.hasPrefix(prefix) == true
        }.count
    }

    @Test func scopesPerSessionAreLimited() async throws {
        var options = Wire.options()
        options.maxScopesPerSession = 2
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        #expect(try await a.fetch("A", index: 1).0["error"] == nil)
        #expect(try await a.fetch("B", index: 2).0["error"] == nil)
        try await a.send(["type": "ScopeFetch", "index": 3, "name": "C", "params": [:]])
        let refused = try await a.next()
        #expect(refused["type"] == "ScopeFetchReply")
        #expect(refused["error"]?["type"] == "limit-exceeded")
        #expect(refused["error"]?["message"] == "Session holds the maximum of 2 scopes")
        // Fetching one it holds again is fine.
        #expect(try await a.fetch("A", index: 4).0["scopeIndex"] == 0)
        await server.stop()
    }

    @Test func openScopesPerServerAreLimited() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = dataOptions(directory)
        options.maxOpenScopes = 2
        options.scopeCreation = .fetch  // loaded (and opened) on fetch
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        _ = try await a.fetch("A", index: 1)
        _ = try await a.fetch("B", index: 2)
        #expect(openFiles(in: directory) == 2)
        // A third scope while two are loaded: an error, not an unloadable scope.
        let b = ServerTestClient(server: server)
        try await b.createSession()
        try await b.send(["type": "ScopeFetch", "index": 1, "name": "C", "params": [:]])
        let refused = try await b.next()
        #expect(refused["error"]?["type"] == "limit-exceeded")
        #expect(refused["error"]?["message"]?.stringValue?.contains("maximum of 2 open scopes") == true)
        // A loaded one is fine.
        #expect(try await b.fetch("A", index: 2).0["error"] == nil)
        await server.stop()
        #expect(openFiles(in: directory) == 0)
    }

    /// In virtual time: the idle timers (and the session ticker) sleep on the test clock; the
    /// server's log says when a scope has unloaded.
    @Test func idleScopesCloseTheirFilesAndReopenOnUse() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = TestClock()
        let lines = ServerLogLines()
        var options = dataOptions(directory)
        options.clock = clock
        options.log = lines.sink
        options.maxOpenScopes = 1
        options.scopeIdleTimeout = .seconds(60)
        options.scopeCreation = .fetch  // loaded (and opened) on fetch
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        let (_, stateA) = try await a.fetch("A", index: 1)
        let rootA = try #require(stateA["rootUUID"]?.stringValue)
        #expect(await clock.waitForSleepers(2))  // the ticker and A's idle timer
        // Positive control: just before the idle timeout, A still holds its file.
        clock.advance(by: .seconds(60) - .milliseconds(1))
        #expect(await clock.waitForSleepers(2))
        #expect(openFiles(in: directory) == 1)
        // Unused for the timeout, A closes its file and gives its slot back.
        clock.advance(by: .milliseconds(1))
        #expect(await lines.contain("scope 'A': unloaded"))
        #expect(openFiles(in: directory) == 0)
        // The slot is free for C; once C is idle too, A reopens on use with its state and subscriber.
        let b = ServerTestClient(server: server)
        try await b.createSession()
        #expect(try await b.fetch("C", index: 1).0["error"] == nil)
        #expect(openFiles(in: directory) == 1)
        clock.advance(by: .seconds(60))
        #expect(await lines.contain("scope 'C': unloaded"))
        #expect(openFiles(in: directory) == 0)
        let reply = try await a.sync(index: 2, fragments: [Wire.fragment("change", rootA, "Root", ["n": 1])])
        #expect(reply["fragmentReplies"] == [[:]])
        #expect(await server.state(ofScope: "A")?["objects"]?[rootA]?["properties"]?["n"] == 1)
        await server.stop()
        #expect(openFiles(in: directory) == 0)
    }
}
