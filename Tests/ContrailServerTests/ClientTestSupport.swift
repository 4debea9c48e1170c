import Contrail
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

// Models and helpers for the client and sync tests.

final class Board: ModelObject {
    @Property var title = ""
    @Property var score = 0
    @Property var cards: [Card] = []
    @Property var pinned: Card?
}

final class Card: ModelObject {
    @Property var text = ""
    @Property var votes = 0
}

/// The peer end of an in-memory transport, scripted by a test: reads what the client sends, with
/// bounded waits, and sends raw messages back.
actor ScriptedPeer {
    let transport: InMemoryTransport
    let headers: [(String, String)]
    private var buffer: [Message] = []
    private var waiter: (id: Int, continuation: CheckedContinuation<Message?, Never>)?
    private var nextWaiter = 0
    private(set) var isFinished = false

    init(transport: InMemoryTransport, headers: [(String, String)]) {
        self.transport = transport
        self.headers = headers
        Task { await self.pump() }
    }

    private func pump() async {
        do {
            for try await frame in transport.frames {
                let messages = (try? MessageFrame.decode(frame)) ?? []
                for message in messages { deliver(message) }
            }
        } catch {}
        isFinished = true
        if let waiter { self.waiter = nil; waiter.continuation.resume(returning: nil) }
    }

    private func deliver(_ message: Message) {
        if let waiter {
            self.waiter = nil
            waiter.continuation.resume(returning: message)
        } else {
            buffer.append(message)
        }
    }

    /// The next message from the client, or nil after `timeout` (or when the transport ended).
    func next(timeout: Duration = .seconds(30)) async -> Message? {
        if !buffer.isEmpty { return buffer.removeFirst() }
        if isFinished { return nil }
        nextWaiter += 1
        let id = nextWaiter
        Task {
            try? await Task.sleep(for: timeout)
            self.expire(id)
        }
        return await withCheckedContinuation { waiter = (id, $0) }
    }

    /// The next message that is not a keep-alive Ping.
    func nextNonPing(timeout: Duration = .seconds(30)) async -> Message? {
        while let message = await next(timeout: timeout) {
            if case .ping(let ping) = message, !ping.resendMissing { continue }
            return message
        }
        return nil
    }

    private func expire(_ id: Int) {
        guard let waiter, waiter.id == id else { return }
        self.waiter = nil
        waiter.continuation.resume(returning: nil)
    }

    /// Sends messages as one array frame, as servers do.
    func send(_ messages: Message...) async {
        try? await transport.send(MessageFrame.encode(messages, asArray: true))
    }

    func close(code: UInt16, reason: String = "") async {
        await transport.close(code: code, reason: reason)
    }

    var header: String? {
        headers.first { $0.0.lowercased() == "x-jetstream-sessiontoken" }?.1
    }
}

/// A connector whose peers a test scripts: every connect yields a new `ScriptedPeer`.
final class ScriptedConnector: SyncConnector {
    private let queue = PeerQueue()
    private let failing = SanitizerVisibleMutex(false)

    /// Makes connects fail (the server is unreachable) or succeed again.
    func setFailing(_ value: Bool) { failing.withLock { $0 = value } }

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        if failing.withLock({ $0 }) { throw .transport("unreachable") }
        let (client, server) = InMemoryTransport.pair()
        await queue.push(ScriptedPeer(transport: server, headers: headers))
        return client
    }

    /// The next connection the client opened (bounded wait).
    func nextPeer(timeout: Duration = .seconds(30)) async throws -> ScriptedPeer {
        try #require(await queue.next(timeout: timeout))
    }
}

actor PeerQueue {
    private var buffer: [ScriptedPeer] = []
    private var waiter: (id: Int, continuation: CheckedContinuation<ScriptedPeer?, Never>)?
    private var nextID = 0

    func push(_ peer: ScriptedPeer) {
        if let waiter { self.waiter = nil; waiter.continuation.resume(returning: peer) } else { buffer.append(peer) }
    }

    func next(timeout: Duration) async -> ScriptedPeer? {
        if !buffer.isEmpty { return buffer.removeFirst() }
        nextID += 1
        let id = nextID
        Task { try? await Task.sleep(for: timeout); self.expire(id) }
        return await withCheckedContinuation { waiter = (id, $0) }
    }

    private func expire(_ id: Int) {
        guard let waiter, waiter.id == id else { return }
        self.waiter = nil
        waiter.continuation.resume(returning: nil)
    }
}

/// A connector to another connector that a test can cut (closing every open transport and failing
/// connects) and restore, to take a client offline.
final class SwitchableConnector: SyncConnector {
    private let inner: any SyncConnector
    private let state = SanitizerVisibleMutex<(offline: Bool, open: [any SyncTransport])>((false, []))

    init(_ inner: any SyncConnector) { self.inner = inner }

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        if state.withLock({ $0.offline }) { throw .transport("offline") }
        let transport = try await inner.connect(headers: headers)
        state.withLock { $0.open.append(transport) }
        return transport
    }

    /// Goes offline: closes every open transport, and connects fail until `restore()`.
    func cut() async {
        let open = state.withLock { state -> [any SyncTransport] in
            state.offline = true
            defer { state.open.removeAll() }
            return state.open
        }
        for transport in open { await transport.close(code: 1001, reason: "network down") }
    }

    func restore() { state.withLock { $0.offline = false } }
}

/// Options for tests: every wait of the client (connect and reply timeouts, keep-alives, the
/// reconnect backoff, the deadlines of `sync` and `detach`) runs on `clock`, in virtual time that
/// moves only when the test advances it; reconnects back off 1-20 ms of that time.
func testOptions(clock: TestClock = TestClock()) -> ClientOptions {
    var options = ClientOptions(clock: clock)
    options.reconnect = ReconnectPolicy(initial: .milliseconds(1), maximum: .milliseconds(20), jitter: 0.5)
    return options
}

extension TestClock {
    /// The longest reconnect backoff of `testOptions`.
    static let maximumBackoff = Duration.milliseconds(20)

    /// Ends the reconnect backoff of `count` clients: waits (bounded) until they sleep on it, then
    /// moves time past it.
    func endBackoff(clients count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async {
        let started = await waitForSleepers(count, dueWithin: Self.maximumBackoff)
        #expect(started, "no reconnect backoff started", sourceLocation: sourceLocation)
        advance(by: Self.maximumBackoff)
    }

    /// Ends a reconnect backoff if one is under way (for polling loops that drive reconnects).
    func endPendingBackoff() {
        if sleeperCount(dueWithin: Self.maximumBackoff) > 0 { advance(by: Self.maximumBackoff) }
    }

    /// Fires the client's keep-alive once: waits (bounded) until it sleeps (`interval` ± 10 %), then
    /// moves time past it.
    func fireKeepAlive(interval: Duration = ClientOptions().pingInterval, sourceLocation: SourceLocation = #_sourceLocation) async {
        let sleeping = await waitForSleepers(dueWithin: interval * 1.1)
        #expect(sleeping, "the keep-alive does not sleep", sourceLocation: sourceLocation)
        advance(by: interval * 1.1)
    }
}
