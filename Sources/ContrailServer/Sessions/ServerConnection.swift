import ContrailWire
import ContrailTransport
import ContrailWebSocket
import Foundation
import Synchronization

/// One transport connected to the server (in-memory or WebSocket): runs the handshake (§1.4) —
/// a new session or a resume by token — then feeds the session its frames and writes the
/// session's outbox to the transport, with keep-alive pings.
final class ServerConnection: Sendable {
    private let transport: any SyncTransport
    /// The connect-time headers, until `run()` takes them (a session outlives its need for them).
    private let connectHeaders: SanitizerVisibleMutex<[(String, String)]>
    /// The peer's address, for counting failed attempts.
    private let peer: String
    private let core: ServerCore
    private let closed = Atomic<Bool>(false)

    init(transport: any SyncTransport, headers: [(String, String)], peer: String, core: ServerCore) {
        self.peer = peer
        self.transport = transport
        self.connectHeaders = SanitizerVisibleMutex(headers)
        self.core = core
    }

    /// Closes the transport once.
    func close(code: UInt16, reason: String) async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        await transport.close(code: code, reason: reason)
    }

    /// Closes with 4096 and `reason`, counting a failed attempt against the peer. Logs one line
    /// per episode: the first failure, and the moment the peer is refused.
    private func deny(_ reason: WireErrorBody) async {
        switch core.throttle.recordFailure(of: peer) {
        case .firstOfEpisode:
            core.log.write("peer \(peer): connection denied: \(reason.message) (more failures from this peer are logged only if it is refused)")
        case .repeated:
            break
        case .nowRefused(let count):
            core.log.write("peer \(peer): \(count) failed attempts; refusing its connections for \(core.throttle.window)")
        }
        await close(code: JetstreamCloseCode.denied, reason: reason.closeReason())
    }

    /// Serves the connection until it closes.
    func run() async {
        guard core.register(self) else {
            await close(code: 1001, reason: "server is stopping")
            return
        }
        defer { core.unregister(self) }
        var frames = transport.frames.makeAsyncIterator()
        guard let (session, resumed) = await establish(&frames) else { return }
        await serve(session, resumed: resumed, &frames)
    }

    /// Checks the peer and the app's connection hook, then resumes a session by token or opens a
    /// new one. Nil when the connection was refused (and closed). The connect-time headers live only
    /// here: a session does not keep them.
    private func establish(_ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator) async
        -> (ServerSession, resumed: Bool)?
    {
        let headers = connectHeaders.withLock { headers in
            defer { headers = [] }
            return headers
        }
        if let wait = core.throttle.refusal(of: peer) {
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            let reason = WireErrorBody(message: "Too many failed attempts; try again in \(seconds) s", type: "rejected")
            await close(code: JetstreamCloseCode.denied, reason: reason.jsonString)
            return nil
        }
        guard await core.options.connectionHook(headers) else {
            await deny(.rejected)
            return nil
        }
        if let token = headers.first(where: { $0.0.lowercased() == "x-jetstream-sessiontoken" })?.1 {
            guard let resumed = core.session(token: token) else {
                // An expired session, or one from before a restart: the client opens a new one. Not a
                // failed attempt (a token is 384 random bits; nobody guesses one), or every client
                // behind one address would be refused after a restart.
                await close(code: JetstreamCloseCode.denied, reason: WireErrorBody.sessionTokenUnrecognized.jsonString)
                return nil
            }
            core.throttle.recordSuccess(of: peer)
            core.log.write("session \(resumed.number) resumed")
            return (resumed, true)
        }
        guard let created = await handshake(&frames, headers: headers) else { return nil }
        return (created, false)
    }

    /// Waits for a bare `SessionCreate` and asks the session hook. A denial is answered, then the
    /// connection is closed with 4096 and the reason (a new attempt needs a new connection, and
    /// counts against the peer).
    private func handshake(_ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator,
                           headers: [(String, String)]) async -> ServerSession? {
        let timeout = core.options.establishTimeout
        let clock = core.clock
        let timer = Task { [self] in
            do { try await clock.sleep(for: timeout) } catch { return }
            await deny(.sessionEstablishTimedOut)
        }
        let frame = await nextFrame(&frames)
        timer.cancel()
        guard let frame, !closed.load(ordering: .relaxed) else { return nil }
        // The rest runs in a task of its own, as each later frame does (see `serve`): parsing and the
        // hooks would otherwise leave their stack memory in the connection's task for its whole life.
        return await Task { await self.createSession(from: frame, headers: headers) }.value
    }

    /// Answers the `SessionCreate` in `frame`: a new session, or a denial (closing the connection).
    private func createSession(from frame: String, headers: [(String, String)]) async -> ServerSession? {
        let create: SessionCreate
        do {
            let json = try JSON(parsing: frame, limits: JSONLimits(maxBytes: core.limits.maxMessageBytes))
            guard case .object = json else { await deny(.unrecognizedHandshake); return nil }
            guard case .sessionCreate(let message) = try Message(json: json) else { await deny(.unrecognizedHandshake); return nil }
            create = message
        } catch let error as WireError {
            await deny(WireErrorBody(message: error.jetstreamMessage, type: "bad-input"))
            return nil
        } catch {
            await deny(WireErrorBody(message: "Could not parse message input, input was not JSON", type: "bad-input"))
            return nil
        }
        guard await core.options.sessionHook(create.params, headers) else {
            // The protocol's answer first (clients report it), then the close with the reason.
            let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(error: .sessionCreationDenied)))])
            try? await transport.send(reply)
            await deny(.sessionCreationDenied)
            return nil
        }
        core.throttle.recordSuccess(of: peer)
        if let reason = await core.cluster?.unavailability() {
            // Cluster mode without NATS: refused, not counted against the peer; the link keeps trying.
            let error = WireErrorBody.serverUnavailable(reason)
            core.log.write("session refused: \(error.message)")
            try? await transport.send(OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(error: error)))]))
            await close(code: JetstreamCloseCode.denied, reason: error.closeReason())
            return nil
        }
        guard let session = core.makeSession() else {
            await close(code: 1001, reason: "server is stopping")
            return nil
        }
        core.log.write("session \(session.number) created (client version \(create.version))")
        let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(
            sessionToken: session.token, extensions: [ScopeDetach.typeName],
            limits: SessionLimits(maxMessageBytes: core.limits.maxMessageBytes,
                                  maxFragmentsPerMessage: core.limits.maxFragmentsPerMessage))))])
        do { try await transport.send(reply) } catch { return session }
        return session
    }

    /// The client's next frame; nil at the end. A WebSocket is read directly rather than through the
    /// transport's stream: each stream layer is one more async frame that the connection's task keeps
    /// allocated for the connection's life (kilobytes per idle session).
    private func nextFrame(_ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator) async -> String? {
        guard let webSocket = (transport as? WebSocketTransport)?.connection else {
            do { return try await frames.next() } catch { return nil }
        }
        do {
            switch try await webSocket.receive() {
            case .text(let text): return text
            case .binary(let bytes): return String(decoding: bytes, as: UTF8.self)
            case nil: return nil
            }
        } catch {
            return nil
        }
    }

    /// Attaches to the session and pumps frames both ways until the transport ends.
    private func serve(_ session: ServerSession, resumed: Bool, _ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator) async {
        let (accepted, previous) = await session.attach(self)
        guard accepted else {
            await deny(.sessionTokenUnrecognized)
            return
        }
        await previous?.close(code: 1000, reason: "replaced by a newer connection of the session")
        let outbox = session.outbox
        let writer = OutboxWriter(outbox: outbox, transport: transport, core: core, token: session.token)
        writer.attach(resumed: resumed)
        core.ticker.startPinging(outbox, key: ObjectIdentifier(self))
        defer {
            writer.stop()
            core.ticker.stopPinging(key: ObjectIdentifier(self))
        }
        while true {
            let frame = await nextFrame(&frames)
            guard let frame else { break }
            // Handled in a task of its own: a task keeps the stack memory of its deepest call until it
            // ends, and this loop lives as long as the connection.
            if case .close(let code, let reason) = await Task(operation: { await session.handle(frame) }).value {
                core.log.write("session \(session.number): closing the connection: \(reason.message)")
                await close(code: code, reason: reason.closeReason())
                break
            }
        }
        await session.detach(self)
    }
}
