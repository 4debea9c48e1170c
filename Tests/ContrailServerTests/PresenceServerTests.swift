import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Synchronization
import Testing

/// Presence (Protocol §8.20) at the server, with raw frames: who joins, changes and leaves, the
/// throttle, the timeout in virtual time, the size bound, grants, and that presence is never
/// recorded nor sent to a session that did not ask for it (an original client).
@Suite("Server presence")
struct PresenceServerTests {
    static func presence(_ value: JSON?, scopeIndex: Int = 0) -> JSON {
        ["type": "Presence", "index": 0, "scopeIndex": .int(Int64(scopeIndex)), "value": value ?? .null]
    }

    /// A server on `clock` with `timeout` presence, and `count` sessions that fetched "S" (scope index 0).
    private func sessions(_ count: Int, clock: TestClock = TestClock(), timeout: Duration = .seconds(30),
                          configure: (inout ServerOptions) -> Void = { _ in }) async throws
        -> (ContrailServer, [ServerTestClient], String)
    {
        var options = Wire.options()
        options.clock = clock
        options.presenceTimeout = timeout
        configure(&options)
        let server = try ContrailServer(options: options)
        var clients: [ServerTestClient] = []
        var root = ""
        for _ in 0..<count {
            let client = ServerTestClient(server: server)
            try await client.createSession()
            let (_, state) = try await client.fetch("S", index: 1)
            root = try #require(state["rootUUID"]?.stringValue)
            clients.append(client)
        }
        return (server, clients, root)
    }

    /// The next message, which must be a `PresencePeers`.
    private func peers(_ client: ServerTestClient, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON {
        let message = try await client.next()
        #expect(message["type"] == "PresencePeers", "got \(message)", sourceLocation: sourceLocation)
        #expect(message["index"] == 0 && message["scopeIndex"] == 0, sourceLocation: sourceLocation)
        return message
    }

    /// Advances `clock` a step at a time (each once something sleeps on it), running `each` before
    /// every step, until `body` returns; at most `limit` of virtual time.
    private func advancing<T: Sendable>(_ clock: TestClock, step: Duration = .milliseconds(250), limit: Duration = .seconds(300),
                                        each: () async throws -> Void = {},
                                        _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let done = Atomic<Bool>(false)
        let task = Task {
            defer { done.store(true, ordering: .sequentiallyConsistent) }
            return try await body()
        }
        var moved = Duration.zero
        while !done.load(ordering: .sequentiallyConsistent), moved < limit {
            try await each()
            _ = await clock.waitForSleepers(1, dueWithin: step, timeout: .milliseconds(50))
            clock.advance(by: step)
            moved += step
            await Task.yield()
        }
        return try await task.value
    }

    @Test func sessionCreateReplyAdvertisesPresenceAndItsLimits() async throws {
        var options = Wire.options()
        options.maxPresenceBytes = 512
        options.presenceUpdatesPerSecond = 4
        let server = try ContrailServer(options: options)
        let client = ServerTestClient(server: server)
        try await client.send(#"{"type":"SessionCreate","index":0,"version":"0.1.0","params":{}}"#)
        let reply = try await client.next()
        #expect(reply["extensions"]?.arrayValue?.contains("Presence") == true)
        #expect(reply["limits"]?["maxPresenceBytes"] == 512 && reply["limits"]?["presenceUpdatesPerSecond"] == 4)
        await server.stop()
    }

    @Test func peersJoinChangeAndLeaveOnDisconnect() async throws {
        let clock = TestClock()
        let (server, clients, _) = try await sessions(2, clock: clock)
        let (a, b) = (clients[0], clients[1])
        try await a.send(Self.presence(["name": "Ada"]))
        let first = try await peers(a)
        #expect(first["replace"] == true && first["peers"] == [], "a's snapshot: nobody else has a value yet")
        try await b.send(Self.presence(nil))   // b watches without a value of its own
        let snapshot = try await peers(b)
        #expect(snapshot["replace"] == true)
        let entry = try #require(snapshot["peers"]?[0])
        #expect(snapshot["peers"]?.arrayValue?.count == 1 && entry["value"] == ["name": "Ada"])
        #expect(entry["user"] == nil, "no authentication: no user")
        let peerA = try #require(entry["peer"]?.stringValue)
        #expect(peerA.count == 36, "a random UUID")
        // A change within the throttle's interval (100 ms) waits for it, in virtual time.
        try await a.send(Self.presence(["name": "Ada", "cursor": [3, 4]]))
        #expect(await clock.waitForSleepers(1, dueWithin: .milliseconds(100)))
        clock.advance(by: .milliseconds(100))
        let change = try await peers(b)
        #expect(change["replace"] == nil)
        #expect(change["peers"] == [["peer": .string(peerA), "value": ["name": "Ada", "cursor": [3, 4]]]])
        // a's connection ends: a leaves.
        await a.transport.close(code: 1006, reason: "network gone")
        let left = try await peers(b)
        #expect(left["peers"] == [["peer": .string(peerA), "value": .null]])
        await server.stop()
    }

    @Test func theThrottleShowsTheLatestValueOnly() async throws {
        let clock = TestClock()
        let (server, clients, root) = try await sessions(2, clock: clock)
        let (a, b) = (clients[0], clients[1])
        try await b.send(Self.presence(nil))
        #expect(try await peers(b)["peers"] == [])
        try await a.send(Self.presence(["n": 1]))
        _ = try await peers(a)
        #expect(try await peers(b)["peers"]?[0]?["value"] == ["n": 1], "the first change is shown at once")
        for n in 2...5 { try await a.send(Self.presence(["n": .int(Int64(n))])) }
        // The session handles a's frames in order: once this reply is in, all four updates were taken.
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "one"])])
        #expect(try await b.next()["type"] == "ScopeSync")
        clock.advance(by: .milliseconds(100))
        #expect(try await peers(b)["peers"]?[0]?["value"] == ["n": 5], "latest wins")
        // Nothing else was queued for b: its next message is the next broadcast.
        _ = try await a.sync(index: 3, fragments: [Wire.fragment("change", root, "Root", ["title": "two"])])
        let next = try await b.next()
        #expect(next["type"] == "ScopeSync", "2, 3 and 4 were never shown: got \(next)")
        await server.stop()
    }

    @Test func aSilentSessionLeavesAfterTheTimeoutAndComesBackWhenHeard() async throws {
        let clock = TestClock()
        let (server, clients, _) = try await sessions(2, clock: clock, timeout: .seconds(4))
        let (a, b) = (clients[0], clients[1])
        try await a.send(Self.presence(["name": "Ada"]))
        _ = try await peers(a)
        try await b.send(Self.presence(nil))
        let peerA = try #require(try await peers(b)["peers"]?[0]?["peer"])
        // Nothing comes from a (its connection is up, but silent: a dead link not noticed yet); b pings.
        let ping = #"{"type":"Ping","index":0,"ack":2,"resendMissing":false}"#
        let left = try await advancing(clock, each: { try await b.send(ping) }) { try await b.next() }
        #expect(left["type"] == "PresencePeers" && left["peers"] == [["peer": peerA, "value": .null]])
        #expect(clock.now.offset >= .seconds(4), "not before the timeout")
        // a is heard again (a ping): it is shown again at the next sweep.
        try await a.send(ping)
        let back = try await advancing(clock, each: { try await b.send(ping) }) { try await b.next() }
        #expect(back["peers"] == [["peer": peerA, "value": ["name": "Ada"]]])
        await server.stop()
    }

    @Test func presenceIsNeverInTheScopeLog() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (server, clients, root) = try await sessions(2) { $0.dataDirectory = directory }
        let (a, b) = (clients[0], clients[1])
        try await b.send(Self.presence(nil))
        _ = try await peers(b)
        try await a.send(Self.presence(["note": "presence-marker-7f3a"]))
        #expect(try await peers(b)["peers"]?[0]?["value"] == ["note": "presence-marker-7f3a"])
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "synced-marker-7f3a"])])
        await server.stop()
        var logged = ""
        for file in try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil) {
            logged += String(decoding: try Data(contentsOf: file), as: UTF8.self)
        }
        #expect(logged.contains("synced-marker-7f3a"), "positive control: the change set is in the log")
        #expect(!logged.contains("presence-marker-7f3a"))
    }

    @Test func anOversizedValueIsDropped() async throws {
        let (server, clients, _) = try await sessions(2) { $0.maxPresenceBytes = 64 }
        let (a, b) = (clients[0], clients[1])
        try await b.send(Self.presence(nil))
        _ = try await peers(b)
        try await a.send(Self.presence(["name": .string(String(repeating: "x", count: 100))]))
        try await a.send(Self.presence(["name": "Ada"]))   // positive control: within the limit
        #expect(try await peers(b)["peers"]?[0]?["value"] == ["name": "Ada"], "the oversized value was never shown")
        await server.stop()
    }

    @Test func onlySessionsThatMayReadTheScopeSeeOrPublish() async throws {
        var options = Wire.options()
        options.sessionHook = { params, _ in
            switch params["token"]?.stringValue {
            case "alice": return .allow(SessionIdentity(user: "alice", grants: ["S": .write]))
            case "carol": return .allow(SessionIdentity(user: "carol", grants: ["S": .read]))
            case "mallory": return .allow(SessionIdentity(user: "mallory", grants: ["T": .write]))
            default: return .deny()
            }
        }
        let server = try ContrailServer(options: options)
        let alice = ServerTestClient(server: server)
        let carol = ServerTestClient(server: server)
        let mallory = ServerTestClient(server: server)
        try await alice.createSession(params: ["token": "alice"])
        try await carol.createSession(params: ["token": "carol"])
        try await mallory.createSession(params: ["token": "mallory"])
        _ = try await alice.fetch("S", index: 1)
        _ = try await carol.fetch("S", index: 1)
        // mallory may not read S: no scope index for it, so no presence of it either way.
        try await mallory.send(["type": "ScopeFetch", "index": 1, "name": "S", "params": [:]])
        #expect(try await mallory.next()["error"]?["type"] == "forbidden")
        _ = try await mallory.fetch("T", index: 2)   // T: scope index 0
        try await mallory.send(Self.presence(nil, scopeIndex: 0))
        #expect(try await peers(mallory)["peers"] == [], "T's presence: nobody")
        try await mallory.send(Self.presence(["name": "spoof"], scopeIndex: 7))   // no such index: ignored
        // A reader may publish (presence needs read, not write), and is shown with its user.
        try await alice.send(Self.presence(nil))
        _ = try await peers(alice)
        try await carol.send(Self.presence(["name": "Carol"]))
        _ = try await peers(carol)
        let seen = try await peers(alice)
        #expect(seen["peers"]?[0]?["user"] == "carol" && seen["peers"]?[0]?["value"] == ["name": "Carol"])
        try await alice.send(Self.presence(["name": "Alice"]))
        #expect(try await peers(carol)["peers"]?[0]?["user"] == "alice")
        // mallory saw none of it: its next message is its own scope's broadcast.
        let other = ServerTestClient(server: server)
        try await other.createSession(params: ["token": "mallory"])
        let (_, state) = try await other.fetch("T", index: 1)
        let rootT = try #require(state["rootUUID"]?.stringValue)
        _ = try await other.sync(index: 2, fragments: [Wire.fragment("change", rootT, "Root", ["title": "t"])])
        let next = try await mallory.next()
        #expect(next["type"] == "ScopeSync", "mallory got \(next)")
        await server.stop()
    }

    @Test func aSessionThatNeverSentPresenceNeverReceivesIt() async throws {
        // c stands for an original Jetstream client: it never sends `Presence`.
        let (server, clients, root) = try await sessions(3)
        let (a, b, c) = (clients[0], clients[1], clients[2])
        try await b.send(Self.presence(nil))
        _ = try await peers(b)
        try await a.send(Self.presence(["name": "Ada"]))
        _ = try await peers(a)
        #expect(try await peers(b)["peers"]?[0]?["value"] == ["name": "Ada"], "positive control: b asked and sees a")
        _ = try await a.sync(index: 2, fragments: [Wire.fragment("change", root, "Root", ["title": "one"])])
        let next = try await c.next()
        #expect(next["type"] == "ScopeSync", "c got \(next)")
        await server.stop()
    }

    @Test func detachingTheScopeLeavesIt() async throws {
        let (server, clients, _) = try await sessions(2)
        let (a, b) = (clients[0], clients[1])
        try await a.send(Self.presence(["name": "Ada"]))
        _ = try await peers(a)
        try await b.send(Self.presence(nil))
        let peerA = try #require(try await peers(b)["peers"]?[0]?["peer"])
        try await a.send(["type": "ScopeDetach", "index": 2, "scopeIndex": 0])
        #expect(try await a.next()["type"] == "ScopeDetachReply")
        #expect(try await peers(b)["peers"] == [["peer": peerA, "value": .null]])
        await server.stop()
    }

    @Test func aClientMayNotSendPresencePeersNorASequencedPresence() async throws {
        let (server, clients, _) = try await sessions(2)
        try await clients[0].send(#"{"type":"PresencePeers","index":0,"scopeIndex":0,"peers":[]}"#)
        #expect(try await clients[0].awaitClose()?.code == 4098)
        try await clients[1].send(#"{"type":"Presence","index":3,"scopeIndex":0,"value":null}"#)
        #expect(try await clients[1].awaitClose()?.code == 4098)
        await server.stop()
    }
}
