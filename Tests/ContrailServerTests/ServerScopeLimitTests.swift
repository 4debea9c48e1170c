import Contrail
import ContrailServer
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

    /// Waits (bounded: 30 s) until no file in `directory` is open; returns whether that happened.
    private func filesClose(in directory: URL) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while openFiles(in: directory) > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
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

    @Test func idleScopesCloseTheirFilesAndReopenOnUse() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = dataOptions(directory)
        options.maxOpenScopes = 1
        options.scopeIdleTimeout = .milliseconds(200)
        let server = try ContrailServer(options: options)
        let a = ServerTestClient(server: server)
        try await a.createSession()
        let (_, stateA) = try await a.fetch("A", index: 1)
        let rootA = try #require(stateA["rootUUID"]?.stringValue)
        // Unused, A closes its file and gives its slot back.
        #expect(try await filesClose(in: directory))
        // The slot is free for C; once C is idle too, A reopens on use with its state and subscriber.
        let b = ServerTestClient(server: server)
        try await b.createSession()
        #expect(try await b.fetch("C", index: 1).0["error"] == nil)
        #expect(try await filesClose(in: directory))
        let reply = try await a.sync(index: 2, fragments: [Wire.fragment("change", rootA, "Root", ["n": 1])])
        #expect(reply["fragmentReplies"] == [[:]])
        #expect(await server.state(ofScope: "A")?["objects"]?[rootA]?["properties"]?["n"] == 1)
        await server.stop()
        #expect(openFiles(in: directory) == 0)
    }
}
