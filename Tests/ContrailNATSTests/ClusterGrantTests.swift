import Contrail
import ContrailNATS
import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// Grants in cluster mode (issue 22): two servers sharing scopes through one `nats-server -js`;
/// a writer on one, a reader and a stranger on the other, each denial beside its allowed twin.
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterGrantTests {
    /// A raw wire peer on an in-memory transport.
    final class Peer: @unchecked Sendable {
        // Invariant for @unchecked Sendable: one test task drives it at a time.
        let transport: any SyncTransport
        var iterator: TypedAsyncStream<String, TransportClosed>.Iterator

        init(_ server: ContrailServer, user: String) async throws {
            let (client, serverEnd) = InMemoryTransport.pair()
            transport = client
            iterator = client.frames.makeAsyncIterator()
            server.accept(serverEnd, headers: [])
            try await send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": ["user": .string(user)]])
            #expect(try await next()["sessionToken"] != nil)
        }

        func send(_ json: JSON) async throws { try await transport.send(json.jsonString) }

        /// Messages of the last frame not taken yet.
        var buffered: [JSON] = []

        /// The next message (a frame is an array of messages).
        func next() async throws -> JSON {
            while buffered.isEmpty {
                guard let text = try await withTimeout(.seconds(60), { [self] in try await iterator.next() }) else {
                    throw TestFailure("the server closed the connection")
                }
                let json = try JSON(parsing: text)
                buffered = json.arrayValue ?? [json]
            }
            return buffered.removeFirst()
        }

        /// The next message of `type`, skipping others.
        func next(_ type: String) async throws -> JSON {
            while true {
                let message = try await next()
                if message["type"] == .string(type) { return message }
            }
        }
    }

    static func makeServer(_ nats: NATSServerProcess) throws -> ContrailServer {
        let grants: [String: ScopeGrants] = ["writer": ["board": .write], "reader": ["board": .read], "stranger": ["other": .write]]
        return try clusterServer(nats) { options, _ in
            options.sessionHook = { params, _ in
                guard case .string(let user)? = params["user"], let granted = grants[user] else { return .deny() }
                return .allow(SessionIdentity(user: user, grants: granted))
            }
        }
    }

    @Test func everyServerOfAClusterEnforcesTheGrants() async throws {
        let nats = try await NATSServerProcess.start()
        let one = try Self.makeServer(nats)
        let two = try Self.makeServer(nats)
        let writer = try await Peer(one, user: "writer")
        let reader = try await Peer(two, user: "reader")
        let stranger = try await Peer(two, user: "stranger")

        var root = ""
        for peer in [writer, reader] {
            try await peer.send(["type": "ScopeFetch", "index": 1, "name": "board", "params": [:]])
            #expect(try await peer.next("ScopeFetchReply")["scopeIndex"] == 0)
            root = try await peer.next("ScopeState")["rootUUID"]?.stringValue ?? ""
        }
        try await stranger.send(["type": "ScopeFetch", "index": 1, "name": "board", "params": [:]])
        #expect(try await stranger.next("ScopeFetchReply")["error"]?["type"] == "forbidden")
        try await stranger.send(["type": "ScopeFetch", "index": 2, "name": "other", "params": [:]])
        #expect(try await stranger.next("ScopeFetchReply")["scopeIndex"] == 0, "positive control: its own scope")

        let uuid = UUID().uuidString.lowercased()
        let link: JSON = ["type": "change", "uuid": .string(root), "clsName": "Root", "properties": ["notes": [.string(uuid)]]]
        let add: JSON = ["type": "add", "uuid": .string(uuid), "clsName": "Note", "properties": ["text": "hi"]]
        try await reader.send(["type": "ScopeSync", "index": 2, "scopeIndex": 0, "fragments": [link, add]])
        #expect(try await reader.next("ScopeSyncReply")["fragmentReplies"]?[0]?["error"]?["type"] == "forbidden")
        try await writer.send(["type": "ScopeSync", "index": 2, "scopeIndex": 0, "fragments": [link, add]])
        #expect(try await writer.next("ScopeSyncReply")["fragmentReplies"] == [[:], [:]])
        // The reader on the other server gets the writer's change set, not its own rejected one.
        let broadcast = try await reader.next("ScopeSync")
        #expect(broadcast["fragments"]?[1]?["uuid"] == .string(uuid))
        #expect(await eventually { await two.state(ofScope: "board")?["objects"]?[uuid] != nil })
        await one.stop()
        await two.stop()
        await nats.stop()
    }
}
