import ContrailSupport
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
    /// The client's address (``ClientAddress``): what failed credentials count against and the log names.
    let peer: String
    private let core: ServerCore
    private let closed = Atomic<Bool>(false)
    /// The wait before a delayed denial, cancelled when the connection is closed (server stop).
    private let denialWait = SanitizerVisibleMutex<Task<Void, Never>?>(nil)

    init(transport: any SyncTransport, headers: [(String, String)], peer: String, core: ServerCore) {
        self.peer = peer
        self.transport = transport
        self.connectHeaders = SanitizerVisibleMutex(headers)
        self.core = core
    }

    /// Closes the transport once.
    func close(code: UInt16, reason: String) async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        denialWait.withLock { $0 }?.cancel()
        await transport.close(code: code, reason: reason)
    }

    /// Failed credentials: answers with `reply` (if any), then closes with 4096 and `reason`, after
    /// the delay the throttle gives this client's address (``AuthThrottle``). Logs one line when
    /// the address's episode starts and one when its delay reaches the cap; never a credential.
    private func deny(_ reason: WireErrorBody, reply: String? = nil, delayed: Bool = true) async {
        guard peer != ClientAddress.inProcess else {
            // The app's own in-process connection: not throttled.
            if let reply { try? await transport.send(reply) }
            await close(code: JetstreamCloseCode.denied, reason: reason.closeReason())
            return
        }
        let source = AuthThrottle.source(of: peer)
        let answer = core.throttle.failed(source, delayed: delayed)
        switch answer.note {
        case .firstOfEpisode:
            core.log.write("peer.denied", level: .warning, "peer \(peer): connection denied: \(reason.message) (answers to its further failures are delayed, up to \(core.throttle.maxDelay); logged again only when that is reached)")
        case .repeated:
            break
        case .reachedCap(let count):
            core.log.write("peer.throttled", level: .warning, "peer \(peer): \(count) failed attempts; its failed attempts are answered after \(core.throttle.maxDelay)")
        }
        if answer.holdsPlace {
            let clock = core.clock
            let delay = answer.delay
            let wait = Task { _ = try? await clock.sleep(for: delay) }
            denialWait.withLock { $0 = wait }
            if closed.load(ordering: .relaxed) { wait.cancel() }
            await wait.value
            core.throttle.release(source)
        }
        if let reply { try? await transport.send(reply) }
        await close(code: JetstreamCloseCode.denied, reason: reason.closeReason())
    }

    /// A connection the server's phase refuses: draining (4099, so a client goes elsewhere, §8.22)
    /// or stopped (1001).
    private func closeRefused(_ phase: ServerPhase.State) async {
        guard phase == .draining else { return await close(code: 1001, reason: "server is stopping") }
        core.metrics.sessionRefused(.draining)
        await close(code: JetstreamCloseCode.draining, reason: WireErrorBody.serverDraining.closeReason())
    }

    /// A connection that broke the handshake (bad or missing first frame, too slow): closed at once
    /// with 4096 and `reason`. Not failed credentials: it neither counts nor is delayed.
    private func refuse(_ reason: WireErrorBody) async {
        await close(code: JetstreamCloseCode.denied, reason: reason.closeReason())
    }

    /// Where the connection's frames are handled once its session is established: a WebSocket's
    /// event loop, so the frames the loop reads are handled on its thread, with no pool thread woken
    /// per burst; nil (the global executor) for other transports. Only work the server bounds runs
    /// there (see ``maxLoopFrameBytes``): the handshake with its hooks, fetches and big frames run in
    /// ``OffLoopExecutor``, so that no connection's reads (or a new connection's handshake) wait
    /// behind them.
    private var loop: EventLoop? { (transport as? WebSocketTransport)?.connection.eventLoop }

    /// The largest frame handled on the connection's ``loop``: parsing and applying a bigger one
    /// (up to ``ServerLimits/maxMessageBytes``) runs in ``OffLoopExecutor``.
    static let maxLoopFrameBytes = 64 << 10

    /// Serves the connection in a task of its own, in ``OffLoopExecutor`` until its session is
    /// established (the connection and session hooks are the app's); returns at once.
    func start() {
        Task(executorPreference: OffLoopExecutor.shared) { await self.run() }
    }

    /// Serves the connection until it closes.
    func run() async {
        if let refusing = core.register(self) {
            await closeRefused(refusing)
            return
        }
        defer { core.unregister(self) }
        var frames = transport.frames.makeAsyncIterator()
        guard let (session, resumed) = await establish(&frames) else { return }
        // From here the task prefers the loop: a frame's arrival resumes it on the loop thread.
        await withTaskExecutorPreference(loop) { await serve(session, resumed: resumed, &frames) }
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
        guard await core.options.connectionHook(headers) else {
            core.metrics.sessionRefused(.denied)
            await deny(.rejected)
            return nil
        }
        if let token = headers.first(where: { $0.0.lowercased() == "x-jetstream-sessiontoken" })?.1 {
            guard let resumed = core.session(token: token) else {
                core.metrics.sessionRefused(.denied)
                // An expired or forged token, or one from before a restart: a failed credential that
                // counts for this address, answered at once (the client opens a new session).
                await deny(.sessionTokenUnrecognized, delayed: false)
                return nil
            }
            core.metrics.sessionsResumed.add(1, ordering: .relaxed)
            core.log.write("session.resumed", session: resumed.number, "session \(resumed.number) resumed from \(peer)")
            return (resumed, true)
        }
        guard let created = await handshake(&frames, headers: headers) else { return nil }
        return (created, false)
    }

    /// Waits for a bare `SessionCreate` and asks the session hook. A denial is answered, then the
    /// connection is closed with 4096 and the reason (a new attempt needs a new connection; the
    /// answer is delayed as the throttle says). A bad first frame or none in time is refused at once.
    private func handshake(_ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator,
                           headers: [(String, String)]) async -> ServerSession? {
        let timeout = core.options.establishTimeout
        let clock = core.clock
        let timer = Task { [self] in
            do { try await clock.sleep(for: timeout) } catch { return }
            await refuse(.sessionEstablishTimedOut)
        }
        let frame = await nextFrame(&frames)
        timer.cancel()
        guard let frame, !closed.load(ordering: .relaxed) else { return nil }
        // The rest runs in a task of its own, as each later frame does (see `serve`): parsing and the
        // hooks would otherwise leave their stack memory in the connection's task for its whole life.
        return await Task(executorPreference: OffLoopExecutor.shared) { await self.createSession(from: frame, headers: headers) }.value
    }

    /// Answers the `SessionCreate` in `frame`: a new session, or a denial (closing the connection).
    private func createSession(from frame: String, headers: [(String, String)]) async -> ServerSession? {
        let create: SessionCreate
        do {
            let json = try JSON(parsing: frame, limits: JSONLimits(maxBytes: core.limits.maxMessageBytes))
            guard case .object = json else { await refuse(.unrecognizedHandshake); return nil }
            guard case .sessionCreate(let message) = try Message(json: json) else { await refuse(.unrecognizedHandshake); return nil }
            create = message
        } catch let error as WireError {
            await refuse(WireErrorBody(message: error.jetstreamMessage, type: "bad-input"))
            return nil
        } catch {
            await refuse(WireErrorBody(message: "Could not parse message input, input was not JSON", type: "bad-input"))
            return nil
        }
        let identity: SessionIdentity
        switch await core.options.sessionHook?(create.params, headers) ?? .allowEverything {
        case .allow(let allowed) where allowed.expiry.map({ $0.timeIntervalSinceNow <= 0 }) == true:
            await denyCredentials(.sessionCreationDenied("the credential has expired"))
            return nil
        case .allow(let allowed):
            identity = allowed
        case .deny(let reason):
            await denyCredentials(reason.map(WireErrorBody.sessionCreationDenied) ?? .sessionCreationDenied)
            return nil
        }
        if let reason = await core.cluster?.unavailability() {
            // Cluster mode without NATS: refused, not counted against the peer; the link keeps trying.
            let error = WireErrorBody.serverUnavailable(reason)
            core.metrics.sessionRefused(.unavailable)
            core.log.write("session.refused", level: .warning, "session refused: \(error.message)")
            try? await transport.send(OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(error: error)))]))
            await close(code: JetstreamCloseCode.denied, reason: error.closeReason())
            return nil
        }
        // The inspector asks who made each change set (params {"contrailOrigins": true}); only an
        // admin is told.
        let origins = identity.isAdmin && create.params["contrailOrigins"] == .bool(true)
        // A Contrail client that takes collection edits in broadcasts asks for them (§8.24).
        let collectionEdits = create.params[SyncFragment.collectionOpsParameter] == .bool(true)
        guard let session = core.makeSession(identity: identity, receivesOrigins: origins, receivesCollectionEdits: collectionEdits) else {
            await closeRefused(core.phase)
            return nil
        }
        core.metrics.sessionsCreated.add(1, ordering: .relaxed)
        let user = identity == .unrestricted ? "" : " for user '\(identity.user)'"
        core.log.write("session.created", session: session.number, "session \(session.number) created\(user) from \(peer) (client version \(create.version))")
        let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(
            sessionToken: session.token,
            extensions: [ScopeDetach.typeName, PresenceUpdate.typeName, SharedMerge.counterExtension, SharedMerge.textExtension,
                         SyncFragment.collectionOpsExtension, ScopeStateChunk.typeName] + (origins ? ["ScopeSyncOrigin"] : [])
                + (core.logWriter != nil || core.cluster != nil ? [MarkRevision.typeName] : []),
            limits: SessionLimits(maxMessageBytes: core.limits.maxMessageBytes,
                                  maxFragmentsPerMessage: core.limits.maxFragmentsPerMessage,
                                  maxPresenceBytes: core.limits.maxPresenceBytes,
                                  presenceUpdatesPerSecond: core.limits.presenceUpdatesPerSecond))))])
        do { try await transport.send(reply) } catch { return session }
        return session
    }

    /// A `SessionCreate` whose credentials were denied: the protocol's answer first (clients report
    /// it), then the close with the reason, both after the throttle's delay for this address.
    private func denyCredentials(_ error: WireErrorBody) async {
        core.metrics.sessionRefused(.denied)
        let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(error: error)))])
        await deny(error, reply: reply)
    }

    /// The client's next frame; nil at the end. A WebSocket is read directly rather than through the
    /// transport's stream: each stream layer is one more async frame that the connection's task keeps
    /// allocated for the connection's life (kilobytes per idle session).
    private func nextFrame(_ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator) async -> String? {
        guard let webSocket = (transport as? WebSocketTransport)?.connection else {
            do { return try await frames.next() } catch { return nil }
        }
        return await Self.receive(from: webSocket)
    }

    /// The next message of `webSocket` as text; nil at its end.
    private static func receive(from webSocket: WebSocketConnection) async -> String? {
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

    /// The client's next frame if it has already arrived (a WebSocket's; other transports: never known).
    private func frameAtHand() async -> String? {
        guard let webSocket = (transport as? WebSocketTransport)?.connection, webSocket.receivedCount > 0 else { return nil }
        return await Self.receive(from: webSocket)
    }

    /// Handles `first` and the frames already at hand after it (at most `DeliveryBatch.maxFrames`
    /// in all), stopping at a verdict to close; returns it and the number of frames handled.
    /// The frames at hand go to the session together (one hop to its actor for them all), a frame
    /// over ``maxLoopFrameBytes`` alone and in ``OffLoopExecutor``.
    private func handleBurst(_ first: String, _ session: ServerSession) async -> (ServerSession.Verdict, frames: Int) {
        var handled = 0
        var next: String? = first
        while let frame = next {
            let verdict: ServerSession.Verdict
            if frame.utf8.count > Self.maxLoopFrameBytes {
                verdict = await OffLoopExecutor.run { await session.handle([frame]) }
                handled += 1
                next = nil
            } else {
                var frames = [frame]
                next = nil
                while handled + frames.count < DeliveryBatch.maxFrames, let more = await frameAtHand() {
                    if more.utf8.count > Self.maxLoopFrameBytes {
                        next = more
                        break
                    }
                    frames.append(more)
                }
                verdict = await session.handle(frames)
                handled += frames.count
            }
            guard case .proceed = verdict else { return (verdict, handled) }
            if next == nil, handled < DeliveryBatch.maxFrames { next = await frameAtHand() }
        }
        return (.proceed, handled)
    }

    /// Attaches to the session and pumps frames both ways until the transport ends.
    private func serve(_ session: ServerSession, resumed: Bool, _ frames: inout TypedAsyncStream<String, TransportClosed>.Iterator) async {
        let (accepted, previous) = await session.attach(self)
        guard accepted else {
            // The session ended between the lookup and now: not a failed credential.
            await refuse(.sessionTokenUnrecognized)
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
        // What the frames at hand deliver goes out once they are all handled (on a WebSocket, once
        // its loop goes idle: frames that arrive meanwhile join them), or every
        // `DeliveryBatch.maxFrames` frames for a client that never pauses (see ``DeliveryBatch``).
        let batch = DeliveryBatch()
        let loop = self.loop
        defer { batch.flush() }
        while true {
            let frame = await nextFrame(&frames)
            guard let frame else { break }
            // The burst is handled in a task of its own: a task keeps the stack memory of its deepest
            // call until it ends, and this loop lives as long as the connection. It starts at once on
            // this thread (no trip through the global queue, no other thread woken per burst), and
            // prefers the connection's loop as this task does. (Started without a preference, its
            // first hop to an actor would go to the global executor: a task started at once may not
            // hand its thread over to an actor; measured, that cost a pool thread's wake-up per burst.)
            let burst = { @Sendable in await batch.run { await self.handleBurst(frame, session) } }
            let (verdict, frames): (ServerSession.Verdict, Int)
            if #available(macOS 26.0, *) {
                (verdict, frames) = await Task.immediate(executorPreference: loop, operation: burst).value
            } else {
                (verdict, frames) = await Task(executorPreference: loop, operation: burst).value
            }
            if case .close(let code, let reason) = verdict {
                batch.flush()
                core.log.write("connection.closed", level: .warning, session: session.number, "session \(session.number): closing the connection: \(reason.message)")
                await close(code: code, reason: reason.closeReason())
                break
            }
            batch.endBurst(frames: frames, loop: loop)
        }
        await session.detach(self)
    }
}
