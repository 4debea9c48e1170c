import Contrail
import ContrailServer
import ContrailWebSocket
import Foundation
import Testing

/// Drives a server with raw JSON frames over a transport (in memory or WebSocket), as a wire peer would.
/// Invariant for `@unchecked Sendable`: one test task drives it at a time.
final class ServerTestClient: @unchecked Sendable {
    let transport: any SyncTransport
    private let frames: IteratorBox
    /// A read that outlived a timed-out `nextFrame`: the next call takes its frame, so none is lost.
    private var pendingRead: Task<String?, any Error>?
    /// Messages received but not yet taken.
    private var buffered: [JSON] = []
    /// How the transport ended, once it has.
    private(set) var closed: TransportClosed?
    private(set) var finished = false

    /// An in-memory client; `peer`: the address the server is told it comes from.
    init(server: ContrailServer, headers: [(String, String)] = [], peer: String? = nil) {
        let (client, serverEnd) = InMemoryTransport.pair()
        transport = client
        frames = IteratorBox(client.frames.makeAsyncIterator())
        server.accept(serverEnd, headers: headers, peer: peer)
    }

    /// A client over `transport` (e.g. a WebSocket to a server in a child process).
    init(transport: any SyncTransport) {
        self.transport = transport
        frames = IteratorBox(transport.frames.makeAsyncIterator())
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

    /// How long a read waits for the server by default: long, because the whole suite runs in
    /// parallel on two cores, and in CI one step of `ServerThrottleTests` once waited more than 30 s
    /// for a pool thread (that suite's three tests took 69-121 s in runs that passed).
    static let defaultTimeout = Duration.seconds(120)

    /// The next frame's text, or nil when the transport ended (see `closed`).
    /// A timeout throws `TestTimeout` at once (the read goes on in the background and the next
    /// call takes its frame), so a missing message fails the test instead of hanging it.
    func nextFrame(timeout: Duration = ServerTestClient.defaultTimeout) async throws -> String? {
        if finished { return nil }
        let read = pendingRead ?? Task { [frames] in try await frames.next() }
        pendingRead = read
        let frame: String?
        do {
            frame = try await Self.result(of: read, within: timeout)
        } catch let error as TransportClosed {
            pendingRead = nil
            closed = error
            finished = true
            return nil
        }
        pendingRead = nil
        if frame == nil { finished = true }
        return frame
    }

    /// `task`'s value, or `TestTimeout` once `timeout` has passed, without waiting for `task` to end.
    private static func result<T: Sendable>(of task: Task<T, any Error>, within timeout: Duration) async throws -> T {
        let outcome = ResumeOnce<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.set(continuation)
            let timer = Task {
                try await Task.sleep(for: timeout)
                outcome.resume(with: .failure(TestTimeout()))
            }
            Task {
                let result = await task.result
                timer.cancel()
                outcome.resume(with: result)
            }
        }
    }

    /// The next message (any type), unwrapping array frames.
    func nextMessage(timeout: Duration = ServerTestClient.defaultTimeout) async throws -> JSON? {
        while buffered.isEmpty {
            guard let frame = try await nextFrame(timeout: timeout) else { return nil }
            let json = try JSON(parsing: frame)
            #expect(json.arrayValue != nil, "server frames are arrays: \(frame)")
            buffered = json.arrayValue ?? [json]
        }
        return buffered.removeFirst()
    }

    /// The next message that is not a keep-alive Ping.
    func next(timeout: Duration = ServerTestClient.defaultTimeout) async throws -> JSON {
        while true {
            guard let message = try await nextMessage(timeout: timeout) else {
                throw TransportEnded(closed: closed)
            }
            if message["type"] == "Ping", message["resendMissing"] == false { continue }
            return message
        }
    }

    /// Waits until the server closes the transport; returns how.
    func awaitClose(timeout: Duration = ServerTestClient.defaultTimeout) async throws -> TransportClosed? {
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

    /// Opens a session on each of `clients` and has each fetch scope `name` as index 1: the usual
    /// start of a test of two or more clients on one scope. Returns the scope's root UUID.
    static func sessionsOnOneScope(_ clients: ServerTestClient..., name: String = "S") async throws -> String {
        for client in clients { try await client.createSession() }
        var root: String?
        for client in clients {
            let (_, state) = try await client.fetch(name, index: 1)
            root = root ?? state["rootUUID"]?.stringValue
        }
        return try #require(root)
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

/// Resumes a continuation with whichever result comes first. `@unchecked Sendable`: the
/// continuation is only touched under `lock`.
private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var early: Result<T, any Error>?

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock()
        if let early {
            lock.unlock()
            continuation.resume(with: early)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }

    func resume(with result: Result<T, any Error>) {
        lock.lock()
        guard let continuation else {
            if early == nil { early = result }
            lock.unlock()
            return
        }
        self.continuation = nil
        early = result  // later results find no continuation and an early result: ignored
        lock.unlock()
        continuation.resume(with: result)
    }
}

/// Lets the iterator be advanced from another task; one read at a time (`ServerTestClient`
/// keeps at most one pending).
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
