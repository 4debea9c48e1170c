import Contrail
import Foundation
import Synchronization

/// One transport connected to the server (in-memory or WebSocket): runs the handshake (§1.4) —
/// a new session or a resume by token — then feeds the session its frames and writes the
/// session's outbox to the transport, with keep-alive pings.
final class ServerConnection: Sendable {
    private let transport: any SyncTransport
    private let headers: [(String, String)]
    private let core: ServerCore
    private let closed = Atomic<Bool>(false)

    init(transport: any SyncTransport, headers: [(String, String)], core: ServerCore) {
        self.transport = transport
        self.headers = headers
        self.core = core
    }

    /// Closes the transport once.
    func close(code: UInt16, reason: String) async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        await transport.close(code: code, reason: reason)
    }

    private func deny(_ reason: WireErrorBody) async {
        core.log.write("connection denied: \(reason.message)")
        await close(code: JetstreamCloseCode.denied, reason: reason.closeReason())
    }

    /// Serves the connection until it closes.
    func run() async {
        guard core.register(self) else {
            await close(code: 1001, reason: "server is stopping")
            return
        }
        defer { core.unregister(self) }
        guard await core.options.connectionHook(headers) else {
            await deny(.rejected)
            return
        }
        var frames = transport.frames.makeAsyncIterator()
        let session: ServerSession
        if let token = headers.first(where: { $0.0.lowercased() == "x-jetstream-sessiontoken" })?.1 {
            guard let resumed = core.session(token: token) else {
                await deny(.sessionTokenUnrecognized)
                return
            }
            session = resumed
            core.log.write("session \(session.number) resumed")
        } else {
            guard let created = await handshake(&frames) else { return }
            session = created
        }
        await serve(session, &frames)
    }

    /// Waits for a bare `SessionCreate` and asks the session hook. A denial is answered and the
    /// connection waits for another `SessionCreate` (until the establish timeout).
    private func handshake(_ frames: inout AsyncThrowingStream<String, any Error>.Iterator) async -> ServerSession? {
        while true {
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
                core.log.write("session denied by the session hook")
                let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(error: .sessionCreationDenied)))])
                do { try await transport.send(reply) } catch { return nil }
                continue
            }
            guard let session = core.makeSession() else {
                await close(code: 1001, reason: "server is stopping")
                return nil
            }
            core.log.write("session \(session.number) created (client version \(create.version))")
            let reply = OutgoingMessage.frame([.message(.sessionCreateReply(SessionCreateReply(sessionToken: session.token)))])
            do { try await transport.send(reply) } catch { return session }
            return session
        }
    }

    /// Attaches to the session and pumps frames both ways until the transport ends.
    private func serve(_ session: ServerSession, _ frames: inout AsyncThrowingStream<String, any Error>.Iterator) async {
        let (accepted, previous) = await session.attach(self)
        guard accepted else {
            await deny(.sessionTokenUnrecognized)
            return
        }
        await previous?.close(code: 1000, reason: "replaced by a newer connection of the session")
        let outbox = session.outbox
        let (wake, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let generation = outbox.attach(wakeContinuation)
        let writer = Task { [transport] in
            for await _ in wake {
                while true {
                    let batch = outbox.takePending()
                    if batch.isEmpty { break }
                    do { try await transport.send(OutgoingMessage.frame(batch)) } catch { return }
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
