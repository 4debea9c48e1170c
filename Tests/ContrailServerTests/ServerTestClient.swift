import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation
import Testing

/// Drives a server with raw JSON frames over a transport (in memory or WebSocket), as a wire peer would.
/// Invariant for `@unchecked Sendable`: one test task drives it at a time.
final class ServerTestClient: @unchecked Sendable {
    let transport: any SyncTransport
    private var iterator: TypedAsyncStream<String, TransportClosed>.Iterator
    /// Messages received but not yet taken.
    private var buffered: [JSON] = []
    /// How the transport ended, once it has.
    private(set) var closed: TransportClosed?
    private(set) var finished = false

    /// An in-memory client; `peer`: the address the server is told it comes from.
    init(server: ContrailServer, headers: [(String, String)] = [], peer: String? = nil) {
        let (client, serverEnd) = InMemoryTransport.pair()
        transport = client
        iterator = client.frames.makeAsyncIterator()
        server.accept(serverEnd, headers: headers, peer: peer)
    }

    /// A client over `transport` (e.g. a WebSocket to a server in a child process).
    init(transport: any SyncTransport) {
        self.transport = transport
        iterator = transport.frames.makeAsyncIterator()
    }

    /// A client over a real WebSocket to `ws://127.0.0.1:port/`, its socket bound to `source`
    /// (e.g. `127.0.0.5`: Linux routes all of 127/8 to the loopback interface) when given.
    static func connect(port: UInt16, headers: [(String, String)] = [], from source: String? = nil) async throws -> ServerTestClient {
        var options = WebSocketOptions()
        options.localAddress = source
        let transport = try await WebSocketConnector(url: "ws://127.0.0.1:\(port)/", options: options).connect(headers: headers)
        return ServerTestClient(transport: transport)
    }

    func send(_ text: String) async throws {
        try await transport.send(text)
    }

    func send(_ json: JSON) async throws {
        try await transport.send(json.jsonString)
    }

    /// The next frame's text, or nil when the transport ended (see `closed`). The default wait is
    /// long: the machine running the whole suite may be very busy.
    func nextFrame(timeout: Duration = .seconds(30)) async throws -> String? {
        if finished { return nil }
        let box = IteratorBox(iterator)
        let frame: String? = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { try await box.next() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestTimeout()
            }
            defer { group.cancelAll() }
            do {
                let first = try await group.next() ?? nil
                return first
            } catch let error as TransportClosed {
                self.closed = error
                return nil
            }
        }
        iterator = box.iterator
        if frame == nil { finished = true }
        return frame
    }

    /// The next message (any type), unwrapping array frames.
    func nextMessage(timeout: Duration = .seconds(30)) async throws -> JSON? {
        while buffered.isEmpty {
            guard let frame = try await nextFrame(timeout: timeout) else { return nil }
            let json = try JSON(parsing: frame)
            #expect(json.arrayValue != nil, "server frames are arrays: \(frame)")
            buffered = json.arrayValue ?? [json]
        }
        return buffered.removeFirst()
    }

    /// The next message that is not a keep-alive Ping.
    func next(timeout: Duration = .seconds(30)) async throws -> JSON {
        while true {
            guard let message = try await nextMessage(timeout: timeout) else {
                throw TransportEnded(closed: closed)
            }
            if message["type"] == "Ping", message["resendMissing"] == false { continue }
            return message
        }
    }

    /// Waits until the server closes the transport; returns how.
    func awaitClose(timeout: Duration = .seconds(30)) async throws -> TransportClosed? {
        while try await nextMessage(timeout: timeout) != nil {}
        return closed
    }

    /// Two sessions on scope "S": the first stays; the second acknowledges its fetch reply and state
    /// (indices 1, 2), then drops off. Returns the first, the second's token and the root UUID.
    static func oneStaysOneLeaves(_ server: ContrailServer) async throws -> (ServerTestClient, String, String) {
        let a = ServerTestClient(server: server)
        let b = ServerTestClient(server: server)
        let tokenB = try await b.createSession()
        try await a.createSession()
        let (_, state) = try await a.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        _ = try await b.fetch("S", index: 1)
        try await b.send(#"{"type":"Ping","index":0,"ack":2,"resendMissing":false}"#)
        await b.transport.close(code: 1006, reason: "network gone")
        return (a, tokenB, root)
    }

    /// SessionCreate, and the token from the reply.
    @discardableResult
    func createSession(params: JSON = [:]) async throws -> String {
        try await send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": params])
        let reply = try await next()
        #expect(reply["type"] == "SessionCreateReply")
        return try #require(reply["sessionToken"]?.stringValue)
    }

    /// Fetches `name` with `index`; returns (ScopeFetchReply, ScopeState).
    func fetch(_ name: String, index: Int) async throws -> (JSON, JSON) {
        try await send(["type": "ScopeFetch", "index": .int(Int64(index)), "name": .string(name), "params": [:]])
        let reply = try await next()
        #expect(reply["type"] == "ScopeFetchReply")
        let state = try await next()
        #expect(state["type"] == "ScopeState")
        return (reply, state)
    }

    /// Sends a ScopeSync and returns its reply (skipping broadcasts, which are returned separately).
    func sync(index: Int, scopeIndex: Int = 0, fragments: [JSON], atomic: Bool? = nil) async throws -> JSON {
        var message: [String: JSON] = ["type": "ScopeSync", "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
                                       "fragments": .array(fragments)]
        if let atomic { message["atomic"] = .bool(atomic) }
        try await send(.object(message))
        while true {
            let reply = try await next()
            if reply["type"] == "ScopeSyncReply" { return reply }
        }
    }
}

/// Lets the iterator be advanced from a child task.
final class IteratorBox: @unchecked Sendable {
    var iterator: TypedAsyncStream<String, TransportClosed>.Iterator
    init(_ iterator: TypedAsyncStream<String, TransportClosed>.Iterator) { self.iterator = iterator }
    func next() async throws -> String? { try await iterator.next() }
}

struct TestTimeout: Error, CustomStringConvertible {
    var description: String { "timed out waiting for the server" }
}

struct TransportEnded: Error, CustomStringConvertible {
    var closed: TransportClosed?
    var description: String { "transport ended: \(closed.map(\.description) ?? "normally")" }
}

/// Fragment builders.
enum Wire {
    static func uuid() -> String { UUID().uuidString.lowercased() }

    static func fragment(_ type: String, _ uuid: String, _ cls: String, _ properties: [String: JSON], bases: [String: [String]]? = nil) -> JSON {
        var members: [String: JSON] = ["type": .string(type), "uuid": .string(uuid), "clsName": .string(cls), "properties": .object(properties)]
        if let bases { members["bases"] = .object(bases.mapValues { .array($0.map(JSON.string)) }) }
        return .object(members)
    }

    static func array(_ uuids: [String]) -> JSON { .array(uuids.map(JSON.string)) }

    /// Server options for tests: silent, in memory.
    static func options() -> ServerOptions {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)  // the main actor may be busy with a large test for a while
        options.log = nil
        return options
    }
}
