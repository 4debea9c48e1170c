import Foundation

/// A connection to a Jetstream-protocol sync server (the Protocol article of the Contrail catalog): opens a session, keeps it alive
/// with pings, reconnects with capped exponential backoff and jitter, resumes the session with its
/// token and has unacknowledged messages resent, and opens a new session (refetching every scope
/// and re-sending pending change sets) when the server has forgotten the old one.
///
/// ```swift
/// let scope = Scope(name: "Canvas")
/// scope.root = Canvas()
/// let client = try await Client.sync(scope, url: "ws://127.0.0.1:3000")
/// canvas.shapes.append(Shape())            // goes to the server, then to every other client
/// ```
///
/// Everything here runs on the main actor; socket I/O runs elsewhere and hands decoded messages over.
@MainActor
public final class Client {
    /// Whether the client is connected.
    public enum Status: Sendable, Equatable {
        /// Not connected, and not trying to (before `connect()`, after `close()`, or after a session was denied).
        case offline
        /// Connecting or reconnecting.
        case connecting
        /// Connected with a session.
        case online
    }

    /// The options given at creation.
    public let options: ClientOptions
    /// The current connection status.
    public private(set) var status: Status = .offline {
        didSet {
            guard status != oldValue else { return }
            statusObservers.notify(status)
        }
    }
    /// The session, once `connect()` succeeded.
    public private(set) var session: Session?
    /// The last error that ended the connection for good (a denied new session, say).
    public private(set) var lastError: SyncError?

    private let connector: any SyncConnector
    private var connection: Connection?
    private var generation = 0
    private var isClosed = false
    private var handshake: ReplyWaiter<SessionAccepted>?
    /// The connect attempt under way: concurrent `connect()` calls wait for this one.
    private var attempt: ReplyWaiter<Session>?
    private var reconnectTask: Task<Void, Never>?
    private var pingTask: Task<Void, Never>?
    private var failures = 0
    private let statusObservers = ObserverList<Status>()

    /// A client for a WebSocket server at `url` (`ws://host:port/path`).
    public convenience init(url: String, options: ClientOptions = .init()) {
        self.init(connector: WebSocketConnector(url: url), options: options)
    }

    /// A client for the servers of a cluster (`contrail serve --nats`): it connects to the first
    /// URL that answers and, on losing its server, to the next ones in turn (`FailoverConnector`).
    public convenience init(urls: [String], options: ClientOptions = .init()) {
        self.init(connector: FailoverConnector(urls: urls), options: options)
    }

    /// A client that opens its transports with `connector` (an in-memory server, a custom transport).
    public init(connector: any SyncConnector, options: ClientOptions = .init()) {
        self.connector = connector
        self.options = options
    }

    /// A dropped client stops reconnecting and pinging and closes its transport.
    isolated deinit {
        reconnectTask?.cancel()
        pingTask?.cancel()
        handshake?.resolve(.failure(.closed))
        attempt?.resolve(.failure(.closed))
        session?.clientClosed()
        if let connection {
            Task { await connection.close(code: 1000, reason: "client released") }
        }
    }

    /// Calls `body` with every status change (connection-status events).
    @discardableResult
    public func onStatusChange(_ observer: AnyObject, _ body: @escaping @MainActor (Status) -> Void) -> ObservationToken {
        statusObservers.add(observer, body)
    }

    /// The status as an `AsyncSequence`: the current status first, then every change. Buffering:
    /// the newest 64 unread statuses are kept. The sequence ends when the client is freed, and for
    /// a consumer whose task is cancelled.
    public func statusUpdates() -> AsyncStream<Status> {
        statusObservers.stream(startingWith: status, bufferingPolicy: .bufferingNewest(64))
    }

    /// Connects and creates a session with `options.sessionParams`. A denied session throws
    /// `SyncError.sessionDenied`; a failed connection `.transport`; `close()` meanwhile `.closed`.
    /// Returns the existing session when already connected; concurrent calls share one attempt.
    /// After `close()`, connecting again opens a new session.
    public func connect() async throws(SyncError) -> Session {
        if let session { return session }
        if let attempt { return try await attempt.wait(timeout: nil).get() }
        let attempt = ReplyWaiter<Session>()
        self.attempt = attempt
        defer { if self.attempt === attempt { self.attempt = nil } }
        isClosed = false
        lastError = nil
        status = .connecting
        do throws(SyncError) {
            let (accepted, connection) = try await openSession()
            guard !attempt.isResolved else {
                // close() ended this attempt while the handshake was answered.
                await connection.close(code: 1000, reason: "client closed")
                throw .closed
            }
            let session = Session(client: self, token: accepted.token)
            self.session = session
            session.renew(accepted, connection: connection)
            status = .online
            startPinging()
            attempt.resolve(.success(session))
            return session
        } catch {
            if self.attempt === attempt { status = .offline }
            attempt.resolve(.failure(error))
            throw error
        }
    }

    /// Closes the connection and stops reconnecting. The session ends (`session` becomes nil; the
    /// server expires it): its waiting calls fail with `SyncError.closed`, and its pending change
    /// sets stay pending. A later `connect()` opens a new session.
    public func close() async {
        isClosed = true
        generation += 1
        reconnectTask?.cancel()
        pingTask?.cancel()
        reconnectTask = nil
        pingTask = nil
        handshake?.resolve(.failure(.closed))
        attempt?.resolve(.failure(.closed))
        attempt = nil
        session?.clientClosed()
        session = nil
        let connection = self.connection
        self.connection = nil
        status = .offline
        await connection?.close(code: 1000, reason: "client closed")
    }

    /// Connects to `url`, opens a session and fetches `scope` (Jetstream's `syncWithScopeName`).
    public static func sync(_ scope: Scope, url: String, params: [String: JSON] = [:],
                            options: ClientOptions = .init()) async throws(SyncError) -> Client {
        try await sync(scope, connector: WebSocketConnector(url: url), params: params, options: options)
    }

    /// Connects to the first of the cluster's server `urls` that answers, opens a session and
    /// fetches `scope`; on losing its server the client fails over to the next URL.
    public static func sync(_ scope: Scope, urls: [String], params: [String: JSON] = [:],
                            options: ClientOptions = .init()) async throws(SyncError) -> Client {
        try await sync(scope, connector: FailoverConnector(urls: urls), params: params, options: options)
    }

    /// Connects with `connector`, opens a session and fetches `scope`.
    public static func sync(_ scope: Scope, connector: any SyncConnector, params: [String: JSON] = [:],
                            options: ClientOptions = .init()) async throws(SyncError) -> Client {
        let client = Client(connector: connector, options: options)
        do {
            let session = try await client.connect()
            try await session.fetch(scope, params: params)
        } catch {
            await client.close()
            throw error
        }
        return client
    }

    // MARK: - Connections

    /// Opens a transport and runs the handshake: `SessionCreate` alone, then wait for the reply.
    private func openSession() async throws(SyncError) -> (SessionAccepted, Connection) {
        let connection = try await open(headers: options.headers)
        let waiter = ReplyWaiter<SessionAccepted>()
        handshake = waiter
        connection.send(.sessionCreate(SessionCreate(version: options.version, params: options.sessionParams)))
        let result = await waiter.wait(timeout: options.connectTimeout)
        if handshake === waiter { handshake = nil }
        switch result {
        case .success(let reply):
            return (reply, connection)
        case .failure(let error):
            if self.connection === connection {
                generation += 1
                self.connection = nil
            }
            await connection.close(code: 1000, reason: "")
            throw error
        }
    }

    private func open(headers: [(String, String)]) async throws(SyncError) -> Connection {
        let transport = try await connector.connect(headers: headers)
        if isClosed {
            await transport.close(code: 1000, reason: "client closed")
            throw .closed
        }
        generation += 1
        let current = generation
        let connection = Connection(transport: transport)
        self.connection = connection
        connection.start(
            onMessages: { [weak self] messages in self?.received(messages, generation: current) },
            onClose: { [weak self] closed in self?.closed(closed, generation: current) })
        return connection
    }

    private func received(_ messages: [Message], generation: Int) {
        guard generation == self.generation else { return }
        if let handshake {
            for case .sessionCreateReply(let reply) in messages {
                if let token = reply.sessionToken {
                    handshake.resolve(.success(SessionAccepted(token: token, extensions: Set(reply.extensions))))
                } else if let error = reply.error, error.type == WireErrorBody.serverUnavailable("").type {
                    handshake.resolve(.failure(.serverUnavailable(error.message)))
                } else {
                    handshake.resolve(.failure(.sessionDenied(reply.error?.message ?? "Session creation denied")))
                }
            }
            return
        }
        session?.receive(messages)
    }

    private func closed(_ closed: TransportClosed?, generation: Int) {
        guard generation == self.generation, !isClosed else { return }
        connection = nil
        let error: SyncError = closed?.code.map { .closedByServer(code: $0, reason: closed?.reason ?? "") }
            ?? .transport(closed?.reason ?? "connection closed")
        handshake?.resolve(.failure(error))
        guard let session else { return }
        session.connectionLost()
        let fatal = closed?.code == JetstreamCloseCode.denied || closed?.code == JetstreamCloseCode.expired
        if fatal && !options.restartSessionOnFatalError {
            lastError = error
            status = .offline
            return
        }
        scheduleReconnect(newSession: fatal)
    }

    /// Drops the connection and resumes on a new one (an out-of-order message, a late reply).
    func forceReconnect() {
        restart(newSession: false)
    }

    /// The server answered the resume: the backoff starts over.
    func resumeConfirmed() {
        failures = 0
    }

    private func restart(newSession: Bool) {
        guard !isClosed, session != nil else { return }
        generation += 1
        if let connection {
            self.connection = nil
            Task { await connection.close(code: 1000, reason: "reconnecting") }
        }
        session?.connectionLost()
        scheduleReconnect(newSession: newSession)
    }

    /// Reconnects with backoff. The task holds the client only between its sleeps, so a client the
    /// app drops stops reconnecting (its `deinit` cancels the task).
    private func scheduleReconnect(newSession: Bool) {
        reconnectTask?.cancel()
        status = .connecting
        reconnectTask = Task { [weak self] in
            var renew = newSession
            while !Task.isCancelled {
                guard let delay = self?.nextReconnectDelay() else { return }
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled, let self, !self.isClosed else { return }
                switch await self.reconnect(renew: renew) {
                case .done: return
                case .retry: continue
                case .retryWithNewSession: renew = true
                }
            }
        }
    }

    private enum ReconnectOutcome { case done, retry, retryWithNewSession }

    private func nextReconnectDelay() -> Duration? {
        guard !isClosed, session != nil else { return nil }
        defer { failures += 1 }
        return options.reconnect.delay(attempt: failures)
    }

    /// One reconnect attempt: resumes the session on a new transport, or opens a new wire session.
    private func reconnect(renew: Bool) async -> ReconnectOutcome {
        guard let session else { return .done }
        do throws(SyncError) {
            if renew {
                let (accepted, connection) = try await openSession()
                session.renew(accepted, connection: connection)
                failures = 0
            } else {
                let connection = try await open(headers: options.headers + [("X-Jetstream-SessionToken", session.token)])
                session.didResume(connection)
            }
            status = .online
            return .done
        } catch {
            switch error {
            case .sessionDenied:
                lastError = error
                status = .offline
                return .done
            case .serverUnavailable:
                lastError = error
                connector.serverUnavailable()
                return .retry
            case .closedByServer(let code, _) where code == JetstreamCloseCode.denied || code == JetstreamCloseCode.expired:
                return .retryWithNewSession
            default:
                return .retry
            }
        }
    }

    private func startPinging() {
        pingTask?.cancel()
        pingTask = Task { [weak self] in
            while let interval = self?.options.pingInterval {
                let jitter = Double.random(in: 0.9...1.1)
                try? await Task.sleep(for: .nanoseconds(Int64(interval.seconds * jitter * 1e9)))
                guard let self, !Task.isCancelled, !self.isClosed else { return }
                guard self.connection != nil, let session = self.session else { continue }
                switch session.tick() {
                case .none: break
                case .reconnect: self.restart(newSession: false)
                case .renew: self.restart(newSession: true)
                }
            }
        }
    }
}
