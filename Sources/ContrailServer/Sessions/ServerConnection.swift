import Contrail
import Foundation
import Synchronization

/// One transport connected to the server (in-memory or WebSocket): runs the handshake (§1.4) —
/// a new session or a resume by token — then feeds the session its frames and writes the
/// session's outbox to the transport, with keep-alive pings.
final class ServerConnection: Sendable {
    private let transport: any SyncTransport
    private let headers: [(String, String)]
    /// The peer's address, for counting failed attempts.
    private let peer: String
    private let core: ServerCore
    private let closed = Atomic<Bool>(false)

    init(transport: any SyncTransport, headers: [(String, String)], peer: String, core: ServerCore) {
        self.peer = peer
        self.transport = transport
        self.headers = headers
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
        if let wait = core.throttle.refusal(of: peer) {
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            let reason = WireErrorBody(message: "Too many failed attempts; try again in \(seconds) s", type: "rejected")
            await close(code: JetstreamCloseCode.denied, reason: reason.jsonString)
            return
        }
        guard await core.options.connectionHook(headers) else {
            await deny(.rejected)
            return
        }
        var frames = transport.frames.makeAsyncIterator()
        if let token = headers.first(where: { $0.0.lowercased() == "x-jetstream-sessiontoken" })?.1 {
            guard let resumed = core.session(token: token) else {
                // An expired session, or one from before a restart: the client opens a new one. Not a
                // failed attempt (a token is 384 random bits; nobody guesses one), or every client
                // behind one address would be refused after a restart.
                await close(code: JetstreamCloseCode.denied, reason: WireErrorBody.sessionTokenUnrecognized.jsonString)
                return
            }
            core.throttle.recordSuccess(of: peer)
            core.log.write("session \(resumed.number) resumed")
            await serve(resumed, resumed: true, &frames)
        } else {
            guard let created = await handshake(&frames) else { return }
            await serve(created, resumed: false, &frames)
        }
    }

    /// Waits for a bare `SessionCreate` and asks the session hook. A denial is answered, then the
    /// connection is closed with 4096 and the reason (a new attempt needs a new connection, and
    /// counts against the peer).
    private func handshake(_ frames: inout AsyncThrowingStream<String, any Error>.Iterator) async -> ServerSession? {
        let timeout = core.options.establishTimeout
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            await deny(.sessionEstablishTimedOut)
        }
        let frame: String?
        do { frame = try await frames.next() } catch { frame = nil }
        timer.cancel()
        guard let frame, !closed.load(ordering: .relaxed) else { return nil }
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
            sessionToken: session.token, extensions: [ScopeDetach.typeName])))])
        do { try await transport.send(reply) } catch { return session }
        return session
    }

    /// Attaches to the session and pumps frames both ways until the transport ends.
    private func serve(_ session: ServerSession, resumed: Bool, _ frames: inout AsyncThrowingStream<String, any Error>.Iterator) async {
        let (accepted, previous) = await session.attach(self)
        guard accepted else {
            await deny(.sessionTokenUnrecognized)
            return
        }
        await previous?.close(code: 1000, reason: "replaced by a newer connection of the session")
        let outbox = session.outbox
        let (wake, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let generation = outbox.attach(wakeContinuation, resumed: resumed)
        let writer = Task { [transport, core] in
            // Frames stay within the message limit (and small, so a close frame is not stuck
            // behind much); a single message over the limit cannot be delivered: end the session
            // with the reason instead of stalling.
            let maxBytes = core.limits.maxMessageBytes
            for await _ in wake {
                while true {
                    let batch = outbox.takePending()
                    if batch.isEmpty { break }
                    for frame in OutgoingMessage.frames(batch, maxBytes: min(maxBytes, 1 << 20)) {
                        guard frame.utf8.count <= maxBytes else {
                            core.expireSession(token: session.token, reason: .limitExceeded(
                                "A message of \(frame.utf8.count) bytes is over the message limit of \(maxBytes) bytes; start a new session"))
                            return
                        }
                        do { try await transport.send(frame) } catch { return }
                    }
                }
            }
        }
        let interval = core.options.pingInterval
        let pinger = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval * Double.random(in: 0.9...1.1)) } catch { return }
                outbox.enqueuePing()
            }
        }
        defer {
            outbox.detach(generation: generation)
            writer.cancel()
            pinger.cancel()
        }
        while true {
            let frame: String?
            do { frame = try await frames.next() } catch { frame = nil }
            guard let frame else { break }
            if case .close(let code, let reason) = await session.handle(frame) {
                core.log.write("session \(session.number): closing the connection: \(reason.message)")
                await close(code: code, reason: reason.closeReason())
                break
            }
        }
        await session.detach(self)
    }
}
