import Contrail
@testable import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Scopes are created deliberately (issue 22, item 5): `--create-scopes fetch|write|declared`,
/// `--max-scopes`, names of 1 to 200 bytes checked before anything, and file names within the file
/// system's limit for every allowed name.
@Suite("Server scope creation")
struct ServerScopeCreationTests {
    private func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-creation-\(UUID().uuidString)", directoryHint: .isDirectory)
    }

    private func options(_ directory: URL, _ mode: ScopeCreation) -> ServerOptions {
        var options = Wire.options()
        options.dataDirectory = directory
        options.scopeCreation = mode
        return options
    }

    private func scopeFiles(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path(percentEncoded: false))) ?? [])
            .filter { $0.hasSuffix(".scope") }.sorted()
    }

    private static func titled(_ root: String, _ title: String) -> JSON {
        Wire.fragment("change", root, "Board", ["title": .string(title)])
    }

    @Test func writeModeFetchCreatesNothingAndTheFirstWriteCreatesTheScopeForEarlierFetchersToo() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ContrailServer(options: options(directory, .write))
        let reader = ServerTestClient(server: server)
        try await reader.createSession()
        let (reply, state) = try await reader.fetch("Board", index: 1)
        #expect(reply["error"] == nil)
        let root = try #require(state["rootUUID"]?.stringValue)
        #expect(state["fragments"]?.arrayValue?.count == 1, "an empty scope: its root only")
        #expect(scopeFiles(directory).isEmpty)
        #expect(!server.scopeExists("Board"))
        #expect(await server.state(ofScope: "Board") == nil)
        // A write that is rejected whole creates nothing either.
        let writer = ServerTestClient(server: server)
        try await writer.createSession()
        #expect(try await writer.fetch("Board", index: 1).1["rootUUID"]?.stringValue == root, "one root before the scope exists")
        let rejected = try await writer.sync(index: 2, fragments: [Wire.fragment("change", Wire.uuid(), "Board", ["title": "x"])])
        #expect(rejected["fragmentReplies"]?[0]?["error"] != nil)
        #expect(scopeFiles(directory).isEmpty)
        // The first accepted write creates it, on that root; the earlier fetcher gets the change.
        let accepted = try await writer.sync(index: 3, fragments: [Self.titled(root, "first")])
        #expect(accepted["fragmentReplies"] == [[:]])
        let broadcast = try await reader.next()
        #expect(broadcast["type"] == "ScopeSync")
        #expect(broadcast["fragments"]?[0]?["properties"]?["title"] == "first")
        #expect(scopeFiles(directory) == ["Board.scope"])
        #expect(server.scopeExists("Board"))
        #expect(await server.state(ofScope: "Board")?["objects"]?[root]?["properties"]?["title"] == "first")
        await server.stop()
        // It stays: a restart finds it on disk, with its root.
        let again = try ContrailServer(options: options(directory, .write))
        #expect(again.scopeExists("Board"))
        let later = ServerTestClient(server: again)
        try await later.createSession()
        #expect(try await later.fetch("Board", index: 1).1["rootUUID"]?.stringValue == root)
        await again.stop()
    }

    @Test func fetchModeCreatesOnFetchAsBefore() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ContrailServer(options: options(directory, .fetch))
        let client = ServerTestClient(server: server)
        try await client.createSession()
        #expect(try await client.fetch("Fetched", index: 1).0["error"] == nil)
        #expect(server.scopeExists("Fetched"))
        #expect(scopeFiles(directory) == ["Fetched.scope"])
        await server.stop()
    }

    @Test func declaredModeServesOnlyDeclaredAndStoredScopes() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try ContrailServer(options: options(directory, .fetch))
        let creator = ServerTestClient(server: first)
        try await creator.createSession()
        _ = try await creator.fetch("Stored", index: 1)
        await first.stop()
        var declared = options(directory, .declared)
        declared.scopes = ["Known"]
        let server = try ContrailServer(options: declared)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        try await client.send(["type": "ScopeFetch", "index": 1, "name": "Other", "params": [:]])
        let refused = try await client.next()
        #expect(refused["type"] == "ScopeFetchReply")
        #expect(refused["error"] == ["message": "No such scope", "type": "scope-not-found"])
        #expect(!scopeFiles(directory).contains("Other.scope"))
        // Positive controls: the declared scope and the one in the data directory.
        #expect(try await client.fetch("Known", index: 2).0["error"] == nil)
        #expect(try await client.fetch("Stored", index: 3).0["error"] == nil)
        await server.stop()
    }

    @Test func maxScopesLimitsTheScopesThatExistOnDiskAndInMemory() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var limited = options(directory, .write)
        limited.maxScopes = 2
        let server = try ContrailServer(options: limited)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        var index = 1
        func write(_ name: String) async throws -> JSON {
            let (_, state) = try await client.fetch(name, index: index)
            let root = try #require(state["rootUUID"]?.stringValue)
            let scopeIndex = Int(try #require(state["scopeIndex"]?.int64Value))
            defer { index += 2 }
            return try await client.sync(index: index + 1, scopeIndex: scopeIndex, fragments: [Self.titled(root, name)])
        }
        #expect(try await write("A")["fragmentReplies"] == [[:]])
        #expect(try await write("B")["fragmentReplies"] == [[:]])
        let third = try await write("C")
        #expect(third["fragmentReplies"]?[0]?["error"]?["type"] == "limit-exceeded")
        #expect(third["fragmentReplies"]?[0]?["error"]?["message"] == "Server holds the maximum of 2 scopes")
        #expect(scopeFiles(directory) == ["A.scope", "B.scope"])
        await server.stop()
        // After a restart the files in the data directory count.
        var fetching = options(directory, .fetch)
        fetching.maxScopes = 2
        let again = try ContrailServer(options: fetching)
        let other = ServerTestClient(server: again)
        try await other.createSession()
        #expect(try await other.fetch("A", index: 1).0["error"] == nil)
        try await other.send(["type": "ScopeFetch", "index": 2, "name": "D", "params": [:]])
        #expect(try await other.next()["error"]?["type"] == "limit-exceeded")
        await again.stop()
    }

    @Test func namesOverTwoHundredBytesOrEmptyAreRefusedBeforeTheHookAndAnythingElse() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        final class Asked: Sendable { let names = SanitizerVisibleMutex<[String]>([]) }
        let asked = Asked()
        var options = options(directory, .fetch)
        options.fetchHook = { name, _ in
            asked.names.withLock { $0.append(name) }
            return nil
        }
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.createSession()
        let tooLong = String(repeating: "é", count: 100) + "x"  // 201 bytes
        for (index, name) in [tooLong, "", "tab\there"].enumerated() {
            try await client.send(["type": "ScopeFetch", "index": .int(Int64(index + 1)), "name": .string(name), "params": [:]])
            let refused = try await client.next()
            #expect(refused["type"] == "ScopeFetchReply")
            #expect(refused["error"]?["type"] == "invalid-scope-name", "\(name)")
        }
        #expect(asked.names.withLock { $0 }.isEmpty)
        #expect(scopeFiles(directory).isEmpty)
        // Positive control: 200 bytes of UTF-8 fetch, store and come back after a restart.
        let longest = String(repeating: "é", count: 100)
        let (_, state) = try await client.fetch(longest, index: 4)
        let root = try #require(state["rootUUID"]?.stringValue)
        let scopeIndex = Int(try #require(state["scopeIndex"]?.int64Value))
        #expect(try await client.sync(index: 5, scopeIndex: scopeIndex, fragments: [Self.titled(root, "long")])["fragmentReplies"] == [[:]])
        #expect(asked.names.withLock { $0 } == [longest])
        let files = scopeFiles(directory)
        #expect(files.count == 1 && files.allSatisfy { $0.utf8.count <= 255 }, "\(files)")
        await server.stop()
        let again = try ContrailServer(options: options)
        #expect(await again.state(ofScope: longest)?["objects"]?[root]?["properties"]?["title"] == "long")
        await again.stop()
        // A declared name breaking the rule is a typed error at start.
        var declared = Wire.options()
        declared.scopes = [tooLong]
        #expect(throws: ServerError.self) { _ = try ContrailServer(options: declared) }
    }

    @Test func fileNamesStayUnderTheLimitAndLongNamesDoNotShareAFile() throws {
        #expect(SHA256.hash(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash([]).prefix(4) == [0xe3, 0xb0, 0xc4, 0x42])
        // Names whose readable form fits keep the form earlier versions wrote.
        #expect(ScopeFileName.fileName(for: "Board") == "Board.scope")
        #expect(ScopeFileName.fileName(for: "a b") == "a%20b.scope")
        #expect(ScopeFileName.fileName(for: String(repeating: "a", count: 200)) == String(repeating: "a", count: 200) + ".scope")
        let worst = String(repeating: "\u{10FFFF}", count: 50)  // 200 bytes, each escaped: 600
        let a = ScopeFileName.fileName(for: worst)
        let b = ScopeFileName.fileName(for: String(repeating: "\u{10FFFF}", count: 49) + "\u{10FFFE}")
        #expect(a.utf8.count <= 255 && b.utf8.count <= 255)
        #expect(a != b)
        #expect(a.contains("~") && a.hasSuffix(".scope"))
        #expect(!a.dropLast(".scope".count).split(separator: "~")[0].hasSuffix("%"), "no escape cut in half")
    }

    @Test func aLogFileOfAnotherScopeIsRefused() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ContrailServer(options: options(directory, .fetch))
        let client = ServerTestClient(server: server)
        try await client.createSession()
        _ = try await client.fetch("Mine", index: 1)
        await server.stop()
        // Put Mine's log where Theirs' would be: opening it finds the other name inside.
        try FileManager.default.moveItem(at: directory.appending(path: "Mine.scope"), to: directory.appending(path: "Theirs.scope"))
        let again = try ContrailServer(options: options(directory, .fetch))
        let other = ServerTestClient(server: again)
        try await other.createSession()
        try await other.send(["type": "ScopeFetch", "index": 1, "name": "Theirs", "params": [:]])
        #expect(try await other.next()["error"]?["message"] == "Scope could not be loaded")
        await again.stop()
    }
}
