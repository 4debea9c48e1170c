import ContrailSupport
import Foundation

/// A client connection to NATS over TCP (TLS after the server's `INFO` for `tls://` servers or with
/// `NATSOptions.tls`, TLS first with `NATSOptions.tlsHandshakeFirst`) on the shared event loop: the core protocol
/// with headers (`PUB`/`HPUB`, `SUB`/`UNSUB`, `MSG`/`HMSG`, `PING`/`PONG`, `-ERR`), request/reply over
/// one wildcard inbox, and reconnection across several servers (subscriptions are restored).
///
/// States: `connected` → (the socket ends) → `reconnecting` → `connected` …; `close()` → `closed`.
/// While reconnecting, publishes wait up to `requestTimeout` for the connection to come back; requests
/// in flight when the socket ends fail with `disconnected` (their outcome is unknown).
public actor NATSConnection {
    /// Where the connection is in its life.
    public enum Status: Sendable, Equatable {
        /// Connected to this server.
        case connected(NATSServerURL)
        /// Looking for a server.
        case reconnecting
        /// Closed by `close()` or after `maxReconnectRounds`.
        case closed
    }

    private struct Link: Sendable {
        let tcp: TCPConnection
        let server: Int
        let info: NATSServerInfo
        let generation: Int
    }

    private enum Phase {
        case connected(Link)
        case reconnecting
        case closed(NATSError)
    }

    /// A reply we wait for: it may arrive before its waiter has suspended (while the request is written).
    private enum Pending {
        case writing
        case arrived(Result<NATSMessage, NATSError>)
        case waiting(CheckedContinuation<Result<NATSMessage, NATSError>, Never>, Task<Void, Never>)
    }

    private struct Subscription {
        let subject: String
        let queue: String?
        let continuation: AsyncStream<NATSMessage>.Continuation
        var dropped = 0
    }

    private let options: NATSOptions
    private var phase: Phase = .reconnecting
    private var generation = 0
    private var lastServer = -1
    private var nextSID: UInt64 = 1
    private var subscriptions: [UInt64: Subscription] = [:]
    private let inboxPrefix = "_INBOX." + UUID().uuidString.replacingOccurrences(of: "-", with: "") + "."
    private var inboxSID: UInt64?
    private var nextToken: UInt64 = 0
    private var pending: [String: Pending] = [:]
    private var pingTokens: [String] = []
    private var linkWaiters: [UInt64: (CheckedContinuation<Result<Void, NATSError>, Never>, Task<Void, Never>)] = [:]
    private var nextWaiter: UInt64 = 0
    /// How many times the connection was re-established after losing its server.
    public private(set) var reconnectCount = 0
    /// Streams returned by `reconnections()`, by id.
    private var reconnectWatchers: [UUID: AsyncStream<Void>.Continuation] = [:]
    /// The last `-ERR` the server sent after the handshake (e.g. a permissions violation), if any.
    public private(set) var lastServerError: NATSError?

    private init(options: NATSOptions) {
        self.options = options
    }

    /// Connects to the first server of `options.servers` that answers.
    /// - Throws: `connectionFailed` when none does (within `connectTimeout` each), `invalidURL` for an empty list.
    public static func connect(_ options: NATSOptions) async throws(NATSError) -> NATSConnection {
        guard !options.servers.isEmpty else { throw .invalidURL("no NATS server given") }
        let connection = NATSConnection(options: options)
        try await connection.connectFirst()
        return connection
    }

    /// Connects to one server with default options.
    public static func connect(_ server: NATSServerURL) async throws(NATSError) -> NATSConnection {
        try await connect(NATSOptions(servers: [server]))
    }

    /// The current state.
    public var status: Status {
        switch phase {
        case .connected(let link): .connected(options.servers[link.server])
        case .reconnecting: .reconnecting
        case .closed: .closed
        }
    }

    /// The `INFO` of the current server, if connected.
    public var serverInfo: NATSServerInfo? {
        if case .connected(let link) = phase { link.info } else { nil }
    }

    /// Messages dropped so far because the subscription's buffer was full.
    public func droppedMessageCount(for subscription: NATSSubscription) -> Int {
        subscriptions[subscription.sid]?.dropped ?? 0
    }

    /// Yields after each reconnection (the subscriptions are restored by then: what was published
    /// while the connection was down did not reach them); finishes when the connection closes.
    public func reconnections() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        if case .closed = phase {
            continuation.finish()
            return stream
        }
        let id = UUID()
        reconnectWatchers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.forgetWatcher(id) } }
        return stream
    }

    private func forgetWatcher(_ id: UUID) {
        reconnectWatchers[id] = nil
    }

    // MARK: Publishing and subscribing

    /// Publishes `payload` (with `headers`, if any) to `subject`.
    /// - Throws: `invalidName`, `payloadTooBig`, `closed`, `timedOut` (no server within `requestTimeout`), `disconnected`.
    public func publish(_ subject: String, payload: [UInt8] = [], headers: NATSHeaders? = nil,
                        replyTo: String? = nil) async throws(NATSError) {
        try Self.validateSubject(subject, wildcards: false)
        if let replyTo { try Self.validateSubject(replyTo, wildcards: false) }
        let headerBytes = try headers?.encoded()
        let link = try await awaitLink()
        let total = (headerBytes?.count ?? 0) + payload.count
        guard total <= link.info.maxPayload else { throw .payloadTooBig(size: total, limit: link.info.maxPayload) }
        var frame: [UInt8] = []
        frame.reserveCapacity(total + subject.utf8.count + 40)
        let reply = replyTo.map { " " + $0 } ?? ""
        if let headerBytes {
            frame.append(contentsOf: "HPUB \(subject)\(reply) \(headerBytes.count) \(total)\r\n".utf8)
            frame.append(contentsOf: headerBytes)
        } else {
            frame.append(contentsOf: "PUB \(subject)\(reply) \(total)\r\n".utf8)
        }
        frame.append(contentsOf: payload)
        frame.append(13)
        frame.append(10)
        try await write(frame, on: link)
    }

    /// Subscribes to `subject` (wildcards allowed), optionally in a queue group.
    /// - Throws: `invalidName`, `closed`.
    public func subscribe(_ subject: String, queue: String? = nil) async throws(NATSError) -> NATSSubscription {
        try Self.validateSubject(subject, wildcards: true)
        if let queue { try Self.validateSubject(queue, wildcards: false) }
        if case .closed(let error) = phase { throw error }
        let sid = nextSID
        nextSID += 1
        let (stream, continuation) = AsyncStream.makeStream(of: NATSMessage.self,
                                                            bufferingPolicy: .bufferingOldest(options.subscriptionBufferLimit))
        subscriptions[sid] = Subscription(subject: subject, queue: queue, continuation: continuation)
        if case .connected(let link) = phase {
            // A lost socket is fine: the reconnect sends every subscription again.
            try? await write(Self.subFrame(subject, queue: queue, sid: sid), on: link)
        }
        return NATSSubscription(sid: sid, subject: subject, messages: stream, connection: self)
    }

    func unsubscribe(sid: UInt64) async {
        guard let subscription = subscriptions.removeValue(forKey: sid) else { return }
        subscription.continuation.finish()
        if case .connected(let link) = phase {
            try? await write(Array("UNSUB \(sid)\r\n".utf8), on: link)
        }
    }

    /// Publishes a request and waits for the first reply (on this connection's inbox).
    /// - Throws: `noResponders` (status 503), `timedOut`, `disconnected`, and `publish`'s errors.
    public func request(_ subject: String, payload: [UInt8] = [], headers: NATSHeaders? = nil,
                        timeout: Duration? = nil) async throws(NATSError) -> NATSMessage {
        let timeout = timeout ?? options.requestTimeout
        if inboxSID == nil {
            let sid = nextSID
            nextSID += 1
            inboxSID = sid
            if case .connected(let link) = phase {
                try? await write(Self.subFrame(inboxPrefix + "*", queue: nil, sid: sid), on: link)
            }
        }
        let token = inboxPrefix + String(nextToken)
        nextToken += 1
        pending[token] = .writing
        do throws(NATSError) {
            try await publish(subject, payload: payload, headers: headers, replyTo: token)
        } catch {
            pending[token] = nil
            throw error
        }
        let reply = try await awaitReply(token, timeout: timeout, what: "request on '\(subject)'").get()
        if reply.status == 503 { throw .noResponders(subject: subject) }
        return reply
    }

    /// Sends `PING` and waits for the server's `PONG`: everything written before has been processed.
    /// - Throws: `timedOut`, `disconnected`, `closed`.
    public func flush(timeout: Duration? = nil) async throws(NATSError) {
        let link = try await awaitLink()
        let token = "PING." + String(nextToken)
        nextToken += 1
        pending[token] = .writing
        pingTokens.append(token)
        do throws(NATSError) {
            try await write(Array("PING\r\n".utf8), on: link)
        } catch {
            pending[token] = nil
            pingTokens.removeAll { $0 == token }
            throw error
        }
        _ = try await awaitReply(token, timeout: timeout ?? options.requestTimeout, what: "flush").get()
    }

    /// Closes the connection: pending operations fail with `closed`, subscriptions finish.
    public func close() async {
        guard let link = enterClosed(.closed) else { return }
        await link.tcp.close()
    }

    // MARK: Waiting

    private func awaitReply(_ token: String, timeout: Duration, what: String) async -> Result<NATSMessage, NATSError> {
        if case .arrived(let result)? = pending[token] {
            pending[token] = nil
            return result
        }
        guard pending[token] != nil else { return .failure(.disconnected) }
        return await withCheckedContinuation { continuation in
            let timer = Task { [weak self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                await self?.resolve(token, .failure(.timedOut(what)))
            }
            pending[token] = .waiting(continuation, timer)
        }
    }

    private func resolve(_ token: String, _ result: Result<NATSMessage, NATSError>) {
        switch pending[token] {
        case .writing?:
            pending[token] = .arrived(result)
        case .waiting(let continuation, let timer)?:
            pending[token] = nil
            pingTokens.removeAll { $0 == token }
            timer.cancel()
            continuation.resume(returning: result)
        case .arrived?, nil:
            break
        }
    }

    private func failAllPending(_ error: NATSError) {
        for token in Array(pending.keys) { resolve(token, .failure(error)) }
        pingTokens.removeAll()
    }

    /// The current link, waiting up to `requestTimeout` while reconnecting.
    private func awaitLink() async throws(NATSError) -> Link {
        while true {
            switch phase {
            case .connected(let link): return link
            case .closed(let error): throw error
            case .reconnecting:
                let id = nextWaiter
                nextWaiter += 1
                let timeout = options.requestTimeout
                let result = await withCheckedContinuation { continuation in
                    let timer = Task { [weak self] in
                        do { try await Task.sleep(for: timeout) } catch { return }
                        await self?.wakeWaiter(id, .failure(.timedOut("waiting for a NATS server")))
                    }
                    linkWaiters[id] = (continuation, timer)
                }
                try result.get()
            }
        }
    }

    private func wakeWaiter(_ id: UInt64, _ result: Result<Void, NATSError>) {
        guard let (continuation, timer) = linkWaiters.removeValue(forKey: id) else { return }
        timer.cancel()
        continuation.resume(returning: result)
    }

    private func wakeAllWaiters(_ result: Result<Void, NATSError>) {
        for id in Array(linkWaiters.keys) { wakeWaiter(id, result) }
    }

    // MARK: Connection life

    private func write(_ frame: [UInt8], on link: Link) async throws(NATSError) {
        do {
            try await link.tcp.send(frame)
        } catch {
            throw .disconnected
        }
    }

    /// Attaches to the first server that answers. When none does and one refused the credentials
    /// (or required TLS), that typed error is thrown rather than `connectionFailed`.
    private func connectFirst() async throws(NATSError) {
        var failure = "no server"
        var refusal: NATSError?
        for index in options.servers.indices {
            do throws(NATSError) {
                try await attach(to: index)
                return
            } catch .authorizationFailed(let why) {
                refusal = .authorizationFailed(why)
            } catch .tlsRequired(let server) {
                refusal = refusal ?? .tlsRequired(server)
            } catch .tls(let why) {
                refusal = refusal ?? .tls(why)
            } catch {
                failure = "\(options.servers[index]): \(error)"
            }
        }
        phase = .closed(.closed)
        throw refusal ?? .connectionFailed(failure)
    }

    /// Connects to server `index`, restores the subscriptions and starts reading.
    private func attach(to index: Int) async throws(NATSError) {
        let server = options.servers[index]
        let (tcp, info, parser) = try await withDeadline(options.connectTimeout, "connecting to \(server)") { [options] () async throws(NATSError) in
            try await Self.handshake(server, options: options)
        }
        if case .closed = phase {
            await tcp.close()
            throw .closed
        }
        generation += 1
        lastServer = index
        let link = Link(tcp: tcp, server: index, info: info, generation: generation)
        phase = .connected(link)
        var restore: [UInt8] = []
        if let inboxSID { restore += Self.subFrame(inboxPrefix + "*", queue: nil, sid: inboxSID) }
        for (sid, subscription) in subscriptions.sorted(by: { $0.key < $1.key }) {
            restore += Self.subFrame(subscription.subject, queue: subscription.queue, sid: sid)
        }
        if !restore.isEmpty { try? await write(restore, on: link) }
        Task { await self.readLoop(link, parser: parser) }
        Task { [weak self] in await self?.keepAlive(link) }
        wakeAllWaiters(.success(()))
    }

    /// TCP connect, `INFO`, the TLS handshake when wanted, `CONNECT` + `PING`, `PONG`. Returns the parser
    /// with any bytes after the `PONG`.
    private static func handshake(_ server: NATSServerURL, options: NATSOptions) async throws(NATSError)
        -> (TCPConnection, NATSServerInfo, NATSParser)
    {
        let wantsTLS = server.isSecure || options.tls != nil || options.tlsHandshakeFirst
        var session: TLSSession?
        if wantsTLS {
            // Made before connecting: loading the CA bundle blocks, so it happens off the loop.
            do throws(TLSError) {
                session = try await TLSSession.client(host: server.host, configuration: options.tls ?? TLSClientConfiguration())
            } catch {
                throw .tls(error)
            }
        }
        let tcp: TCPConnection
        do {
            tcp = try await TCPConnection.connect(host: server.host, port: server.port, timeout: options.connectTimeout,
                                                  writeHighWater: options.writeHighWater, readHighWater: options.readHighWater)
        } catch {
            throw .connectionFailed("\(server): \(error)")
        }
        var parser = NATSParser()
        do throws(NATSError) {
            if options.tlsHandshakeFirst, let session {
                // `handshake_first` servers: TLS before anything, INFO comes through it.
                guard await tcp.startSecurity(session) else { throw .tls(.handshakeFailed("\(server) closed before the TLS handshake")) }
            }
            let early = options.tlsHandshakeFirst ? session : nil
            guard case .info(let json) = try await nextOperation(tcp, &parser, tls: early) else {
                throw .protocolViolation("the server did not start with INFO")
            }
            let info: NATSServerInfo
            do { info = try JSONDecoder().decode(NATSServerInfo.self, from: Data(json)) } catch {
                throw .protocolViolation("unreadable INFO: \(error)")
            }
            guard info.headers == true else { throw .connectionFailed("\(server) does not support headers (NATS 2.2 or later needed)") }
            if let session, !options.tlsHandshakeFirst {
                // The server sent INFO in plaintext and waits for the client's TLS handshake on the same
                // socket; CONNECT (with the credentials) goes encrypted. Plaintext after INFO would pass
                // as if it came through TLS: refused.
                guard info.tlsRequired == true || info.tlsAvailable == true else {
                    throw .tls(.handshakeFailed("\(server) does not offer TLS"))
                }
                guard parser.bufferedByteCount == 0, await tcp.startSecurity(session) else {
                    throw .protocolViolation("\(server) sent more than INFO before the TLS handshake")
                }
            } else if session == nil, info.tlsRequired == true {
                throw .tlsRequired(server.description)
            }
            parser.maxPayload = max(info.maxPayload, 1) + 64 * 1024
            var connect: [String: Any] = [
                "verbose": false, "pedantic": false, "headers": true, "no_responders": true, "protocol": 1,
                "lang": "swift", "version": "0.1", "name": options.name, "echo": options.echo,
            ]
            // Sent whether or not INFO says `auth_required`: a server without authorization ignores them.
            for (key, value) in try options.credentials.connectFields(nonce: info.nonce) { connect[key] = value }
            let body = (try? JSONSerialization.data(withJSONObject: connect, options: [.sortedKeys])) ?? Data()
            do {
                try await tcp.send(Array("CONNECT ".utf8) + Array(body) + Array("\r\nPING\r\n".utf8))
            } catch {
                if let failure = session?.failure { throw .tls(failure) }
                throw .connectionFailed("\(server): \(error)")
            }
            while true {
                switch try await nextOperation(tcp, &parser, tls: session) {
                case .pong: return (tcp, info, parser)
                case .error(let message) where Self.isAuthorizationError(message):
                    let given = options.credentials == .none ? "no credentials were given" : "gave \(options.credentials)"
                    throw .authorizationFailed("\(server) answered '\(message)' (\(given))")
                case .error(let message): throw .serverError(message)
                case .ping: try? await tcp.send(Array("PONG\r\n".utf8))
                default: continue
                }
            }
        } catch {
            await tcp.close()
            throw error
        }
    }

    /// Whether an `-ERR` refuses the credentials ("Authorization Violation", "Authentication Timeout", ...).
    static func isAuthorizationError(_ message: String) -> Bool {
        let lowered = message.lowercased()
        return lowered.contains("authorization") || lowered.contains("authentication")
    }

    /// The next operation of the handshake; a failure of `tls` (the certificate refused, ...) is thrown
    /// as `.tls` rather than as the broken socket it caused.
    private static func nextOperation(_ tcp: TCPConnection, _ parser: inout NATSParser, tls: TLSSession?) async throws(NATSError)
        -> NATSParser.Operation
    {
        while true {
            if let operation = try parser.next() { return operation }
            let bytes: [UInt8]?
            do { bytes = try await tcp.receive() } catch {
                if let failure = tls?.failure { throw .tls(failure) }
                throw .connectionFailed("reading: \(error)")
            }
            guard let bytes else {
                if let tls, !tls.handshakeCompleted {
                    if let failure = tls.failure { throw .tls(failure) }
                    throw .tls(.handshakeFailed("the server closed the connection during the TLS handshake"))
                }
                throw .connectionFailed("the server closed the connection during the handshake")
            }
            parser.append(bytes)
        }
    }

    private func readLoop(_ link: Link, parser: NATSParser) async {
        var parser = parser
        var reason = "the server closed the connection"
        reading: while isCurrent(link) {
            do throws(NATSError) {
                while let operation = try parser.next() {
                    await handle(operation, on: link)
                }
            } catch {
                reason = error.description
                break reading
            }
            do {
                guard let bytes = try await link.tcp.receive() else { break reading }
                parser.append(bytes)
            } catch {
                reason = "\(error)"
                break reading
            }
        }
        await link.tcp.close()
        linkLost(link, reason: reason)
    }

    /// Pings every `pingInterval`; a ping unanswered for two intervals closes the socket, which ends
    /// the read loop and starts a reconnect.
    private func keepAlive(_ link: Link) async {
        while isCurrent(link) {
            do { try await Task.sleep(for: options.pingInterval) } catch { return }
            guard isCurrent(link) else { return }
            do throws(NATSError) {
                try await flush(timeout: options.pingInterval * 2)
            } catch .timedOut {
                if isCurrent(link) { await link.tcp.close() }
                return
            } catch {
                return
            }
        }
    }

    private func isCurrent(_ link: Link) -> Bool {
        if case .connected(let current) = phase { current.generation == link.generation } else { false }
    }

    private func handle(_ operation: NATSParser.Operation, on link: Link) async {
        switch operation {
        case .ping:
            try? await write(Array("PONG\r\n".utf8), on: link)
        case .pong:
            if !pingTokens.isEmpty { resolve(pingTokens.removeFirst(), .success(NATSMessage(subject: "", payload: []))) }
        case .message(let sid, let message):
            if sid == inboxSID {
                resolve(message.subject, .success(message))
            } else if let subscription = subscriptions[sid] {
                if case .dropped = subscription.continuation.yield(message) { subscriptions[sid]?.dropped += 1 }
            }
        case .error(let message):
            // An -ERR that ends the connection is followed by the socket closing.
            lastServerError = .serverError(message)
        case .info, .ok:
            break
        }
    }

    private func linkLost(_ link: Link, reason: String) {
        guard isCurrent(link) else { return }
        phase = .reconnecting
        failAllPending(.disconnected)
        Task { await self.reconnect() }
    }

    private func reconnect() async {
        var rounds = 0
        while case .reconnecting = phase {
            let count = options.servers.count
            for step in 1...count {
                guard case .reconnecting = phase else { return }
                let index = (lastServer + step) % count
                do throws(NATSError) {
                    try await attach(to: index)
                    reconnectCount += 1
                    for watcher in reconnectWatchers.values { watcher.yield() }
                    return
                } catch {
                    continue
                }
            }
            rounds += 1
            if let limit = options.maxReconnectRounds, rounds >= limit {
                _ = enterClosed(.connectionFailed("no NATS server answered in \(rounds) rounds"))
                return
            }
            try? await Task.sleep(for: options.reconnectWait)
        }
    }

    /// Moves to `closed`, failing everything that waits; returns the link to close, if any.
    private func enterClosed(_ error: NATSError) -> Link? {
        let link: Link?
        switch phase {
        case .closed: return nil
        case .connected(let current): link = current
        case .reconnecting: link = nil
        }
        phase = .closed(error)
        failAllPending(error)
        wakeAllWaiters(.failure(error))
        for subscription in subscriptions.values { subscription.continuation.finish() }
        subscriptions.removeAll()
        for watcher in reconnectWatchers.values { watcher.finish() }
        reconnectWatchers.removeAll()
        return link
    }

    // MARK: Wire helpers

    private static func subFrame(_ subject: String, queue: String?, sid: UInt64) -> [UInt8] {
        Array("SUB \(subject)\(queue.map { " " + $0 } ?? "") \(sid)\r\n".utf8)
    }

    /// Checks a subject: non-empty tokens separated by '.', no whitespace; `*`/`>` only if `wildcards`.
    static func validateSubject(_ subject: String, wildcards: Bool) throws(NATSError) {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        guard !subject.isEmpty, !subject.contains(where: { $0.isWhitespace }),
              tokens.allSatisfy({ !$0.isEmpty }) else {
            throw .invalidName("subject '\(subject)'")
        }
        if !wildcards && tokens.contains(where: { $0 == "*" || $0 == ">" }) {
            throw .invalidName("subject '\(subject)' may not hold wildcards here")
        }
    }
}
