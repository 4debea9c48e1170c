import Contrail
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Identities and grants (issue 22): every user × scope × fetch/write/broadcast cell observed on the
/// wire and compared with what the grants say, so each denial sits beside its allowed cells.
@Suite("Grants")
struct GrantMatrixTests {
    static let scopes = ["board-17", "notes-alice", "team-x"]
    /// `marker-*` lets every user end its observation with a fetch (see `drain`).
    static let grants: [String: ScopeGrants] = [
        "alice": ["board-17": .read, "notes-alice": .write, "team-*": .write, "marker-*": .read],
        "bob": ["board-17": .write, "team-x": .read, "marker-*": .read],
        "carol": ["marker-*": .read],
        "dave": ["*": .read],
    ]

    /// A hook: params `{"user": name}` acts as that user's grants; unknown users are denied.
    static func options() -> ServerOptions {
        var options = Wire.options()
        options.sessionHook = { params, _ in
            guard case .string(let user)? = params["user"], let grants = Self.grants[user] else { return .deny(reason: "unknown user") }
            return .allow(SessionIdentity(user: user, grants: grants))
        }
        return options
    }

    /// One observed session: its scope indices by name and the broadcasts it saw (scope, writer).
    final class Observer: @unchecked Sendable {
        // Invariant for @unchecked Sendable: one test task drives it at a time.
        let user: String
        let client: ServerTestClient
        var scopeIndex: [String: Int] = [:]
        var roots: [String: String] = [:]
        var nextIndex = 1
        var broadcasts: Set<[String]> = []

        init(user: String, server: ContrailServer) {
            self.user = user
            client = ServerTestClient(server: server)
        }

        func take(_ message: JSON) {
            guard message["type"] == "ScopeSync", let index = message["scopeIndex"]?.int64Value,
                  let name = scopeIndex.first(where: { $0.value == Int(index) })?.key else { return }
            for fragment in message["fragments"]?.arrayValue ?? [] {
                if let writer = fragment["properties"]?["by"]?.stringValue { broadcasts.insert([name, writer]) }
            }
        }

        /// Fetches `name`: the reply's error type, or nil when allowed (after its ScopeState).
        func fetch(_ name: String) async throws -> String?? {
            let index = nextIndex
            nextIndex += 1
            try await client.send(["type": "ScopeFetch", "index": .int(Int64(index)), "name": .string(name), "params": [:]])
            while true {
                let message = try await client.next()
                guard message["type"] == "ScopeFetchReply", message["replyTo"] == .int(Int64(index)) else { take(message); continue }
                if let error = message["error"] { return .some(error["type"]?.stringValue) }
                scopeIndex[name] = Int(message["scopeIndex"]?.int64Value ?? -1)
                let state = try await client.next()
                #expect(state["type"] == "ScopeState")
                roots[name] = state["rootUUID"]?.stringValue
                return .none
            }
        }

        /// Writes a new object under the root of `name`: each fragment's error type (nil: accepted),
        /// and the new object's uuid.
        func write(_ name: String) async throws -> ([String?], String) {
            let index = nextIndex
            nextIndex += 1
            let uuid = Wire.uuid()
            let fragments = [Wire.fragment("change", roots[name] ?? "", "Root", ["by": .string(user), "notes": Wire.array([uuid])]),
                             Wire.fragment("add", uuid, "Note", ["by": .string(user)])]
            try await client.send(["type": "ScopeSync", "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex[name] ?? -1)),
                                   "fragments": .array(fragments)])
            while true {
                let message = try await client.next()
                guard message["type"] == "ScopeSyncReply", message["replyTo"] == .int(Int64(index)) else { take(message); continue }
                let replies = message["fragmentReplies"]?.arrayValue ?? []
                return (replies.map { $0["error"].map { $0["type"]?.stringValue ?? "untyped" } }, uuid)
            }
        }
    }

    @Test func everyCellOfTheMatrixFollowsTheGrants() async throws {
        let server = try ContrailServer(options: Self.options())
        let users = Self.grants.keys.sorted()
        var observers: [Observer] = []
        for user in users {
            let observer = Observer(user: user, server: server)
            try await observer.client.createSession(params: ["user": .string(user)])
            observers.append(observer)
        }
        // Fetch: allowed exactly with read; a denial is typed `forbidden` and takes no scope index.
        for observer in observers {
            for scope in Self.scopes {
                let outcome = try await observer.fetch(scope)
                let grants = try #require(Self.grants[observer.user])
                if grants.allow(.read, scope) {
                    #expect(outcome == .none, "\(observer.user) reads \(scope)")
                } else {
                    #expect(outcome == .some("forbidden"), "\(observer.user) may not read \(scope)")
                    #expect(observer.scopeIndex[scope] == nil)
                }
            }
        }
        // Write: accepted exactly with write; without it every fragment is rejected and nothing applied.
        var accepted: Set<[String]> = []
        for observer in observers {
            for scope in Self.scopes where observer.scopeIndex[scope] != nil {
                let (replies, uuid) = try await observer.write(scope)
                // A scope nobody may write yet does not exist (scopes are created by their first write).
                let state = await server.state(ofScope: scope)
                if Self.grants[observer.user]?.allow(.write, scope) == true {
                    #expect(replies == [nil, nil], "\(observer.user) writes \(scope)")
                    #expect(state?["objects"]?[uuid] != nil)
                    accepted.insert([scope, observer.user])
                } else {
                    #expect(replies == ["forbidden", "forbidden"], "\(observer.user) may not write \(scope)")
                    #expect(state?["objects"]?[uuid] == nil, "nothing applied")
                }
            }
        }
        #expect(accepted == [["board-17", "bob"], ["notes-alice", "alice"], ["team-x", "alice"]])
        // Broadcast: every accepted write reached exactly the other sessions that may read its scope.
        for observer in observers {
            _ = try await observer.fetch("marker-\(observer.user)")  // replies after every broadcast queued before it
            let expected = Set(accepted.filter { $0[1] != observer.user && Self.grants[observer.user]?.allow(.read, $0[0]) == true })
            #expect(observer.broadcasts == expected, "\(observer.user)'s broadcasts")
        }
        await server.stop()
    }

    @Test func anUnknownUserIsDeniedWithTheHooksReason() async throws {
        let server = try ContrailServer(options: Self.options())
        let stranger = ServerTestClient(server: server)
        try await stranger.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": "mallory"]])
        let reply = try await stranger.next()
        #expect(reply["error"] == ["message": "Session creation denied: unknown user", "type": "session-creation-denied"])
        #expect(try await stranger.awaitClose()?.code == 4096)
        try await ServerTestClient(server: server).createSession(params: ["user": "carol"])
        await server.stop()
    }

    @Test func fetchHookAndProceduresSeeTheIdentity() async throws {
        let seen = SanitizerVisibleMutex<[String]>([])
        var options = Self.options()
        options.fetchHook = { name, _, identity in
            seen.withLock { $0.append("fetch \(name) by \(identity.user)") }
            return nil
        }
        let declaration = try ProcedureDeclaration("Root.stamp", constraints: [ProcedureConstraint(kind: .change, className: "Root", properties: ["stamped": .hasNewValue])])
        options.procedures = [ServerProcedure(declaration) { call in
            seen.withLock { $0.append("call by \(call.identity.user), may write \(call.scopeName): \(call.identity.may(.write, call.scopeName))") }
            return []
        }]
        let server = try ContrailServer(options: options)
        let alice = ServerTestClient(server: server)
        try await alice.createSession(params: ["user": "alice"])
        let (_, state) = try await alice.fetch("notes-alice", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        try await alice.send(["type": "ScopeSync", "index": 2, "scopeIndex": 0, "procedure": "Root.stamp", "atomic": true,
                              "fragments": [Wire.fragment("change", root, "Root", ["stamped": true])]])
        var reply = try await alice.next()
        while reply["type"] != "ScopeSyncReply" { reply = try await alice.next() }
        #expect(reply["fragmentReplies"] == [[:]])
        #expect(seen.withLock { $0 } == ["fetch notes-alice by alice", "call by alice, may write notes-alice: true"])
        await server.stop()
    }

    @Test func patternsMatchWithStarsAndTheHighestAccessWins() {
        let grants: ScopeGrants = ["team-*": .read, "team-*-notes": .write, "*board": .read, "exact": .write, "a*b*c": .read]
        #expect(grants.access(to: "team-x") == .read)
        #expect(grants.access(to: "team-x-notes") == .write)
        #expect(grants.access(to: "team-") == .read)
        #expect(grants.access(to: "whiteboard") == .read)
        #expect(grants.access(to: "board-1") == nil)
        #expect(grants.access(to: "exact") == .write && grants.access(to: "exactly") == nil)
        #expect(grants.access(to: "aXbYc") == .read && grants.access(to: "abc") == .read && grants.access(to: "acb") == nil)
        #expect(ScopeGrants.everything.allow(.write, "anything") && !ScopeGrants.nothing.allow(.read, "anything"))
    }
}
