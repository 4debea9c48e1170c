import ContrailSupport
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
/// Where the connection stands is one state machine (`ClientLifecycle`); every wait (timeouts,
/// backoff, keep-alive) runs on `ClientOptions.clock`, so tests can run them in virtual time.
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
    public var session: Session? { lifecycle.session }
    /// The last error that ended the connection for good (a denied new session, say).
    public private(set) var lastError: SyncError?

    typealias Lifecycle = ClientLifecycle<Session, Connection, ReplyWaiter<Session>>

    private let connector: any SyncConnector
    /// Where the connection stands: every lifecycle decision is made by this state machine; the
    /// client performs the actions it returns.
    private var lifecycle: Lifecycle
    /// The lifecycle's one timer at a time: the handshake's connect timeout or the reconnect backoff.
    private var timer: Task<Void, Never>?
    private var keepAlive: Task<Void, Never>?
    /// The clock every wait of this client runs on (`options.clock`).
    let timeline: ElapsedClock
    private let statusObservers = ObserverList<Status>()

    /// A client for a WebSocket server at `url` (`ws://host:port/path`, or `wss://` verified as
    /// `options.tls` says).
    public convenience init(url: String, options: ClientOptions = .init()) {
        self.init(connector: WebSocketConnector(url: url, tls: options.tls, maxMessageBytes: options.maxMessageBytes), options: options)
    }

    /// A client for the servers of a cluster (`contrail serve --nats`): it connects to the first
    /// URL that answers and, on losing its server, to the next ones in turn (`FailoverConnector`).
    public convenience init(urls: [String], options: ClientOptions = .init()) {
        self.init(connector: FailoverConnector(urls: urls, tls: options.tls, maxMessageBytes: options.maxMessageBytes), options: options)
    }

    /// A client that opens its transports with `connector` (an in-memory server, a custom transport).
    public init(connector: any SyncConnector, options: ClientOptions = .init()) {
        self.connector = connector
        self.options = options
        timeline = ElapsedClock(options.clock)
        lifecycle = Lifecycle(restartSessionOnFatalError: options.restartSessionOnFatalError)
    }

    /// A dropped client stops reconnecting and pinging and closes its transport.
    isolated deinit {
        for action in lifecycle.handle(.close) {
            switch action {
            case .stopKeepAlive: keepAlive?.cancel()
            case .cancelTimer: timer?.cancel()
            case .endSession(let session): session.clientClosed()
            case .resolveAttempt(let attempt, let result): attempt.resolve(result)
            case .closeConnection(let connection, _):
                Task { await connection.close(code: 1000, reason: "client released") }
            default: break
            }
        }
        timer?.cancel()
        keepAlive?.cancel()
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
        let actions = handle(.connect(session: Session(client: self, token: ""), attempt: ReplyWaiter()))
        for action in actions {
            switch action {
            case .returnSession(let session): return session
            case .wait(let attempt): return try await attempt.wait(timeout: nil).get()
            default: continue
            }
        }
        preconditionFailure("connect() returned neither a session nor an attempt")
    }

    /// Closes the connection and stops reconnecting. The session ends (`session` becomes nil; the
    /// server expires it): its waiting calls fail with `SyncError.closed`, and its pending change
    /// sets stay pending. A later `connect()` opens a new session.
    public func close() async {
        var closing: [Connection] = []
        for action in lifecycle.handle(.close) {
            if case .closeConnection(let connection, _) = action { closing.append(connection) } else { perform(action) }
        }
        status = lifecycle.status
        for connection in closing { await connection.close(code: 1000, reason: "client closed") }
    }

    /// Connects to `url`, opens a session and fetches `scope` (Jetstream's `syncWithScopeName`).
    public static func sync(_ scope: Scope, url: String, params: [String: JSON] = [:],
                            options: ClientOptions = .init()) async throws(SyncError) -> Client {
        try await sync(scope, connector: WebSocketConnector(url: url, tls: options.tls, maxMessageBytes: options.maxMessageBytes), params: params, options: options)
    }

    /// Connects to the first of the cluster's server `urls` that answers, opens a session and
    /// fetches `scope`; on losing its server the client fails over to the next URL.
    public static func sync(_ scope: Scope, urls: [String], params: [String: JSON] = [:],
                            options: ClientOptions = .init()) async throws(SyncError) -> Client {
        try await sync(scope, connector: FailoverConnector(urls: urls, tls: options.tls, maxMessageBytes: options.maxMessageBytes), params: params, options: options)
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

    // MARK: - The lifecycle

    /// Feeds `event` to the lifecycle, performs the actions it returns, and shows the new status.
    @discardableResult
    private func handle(_ event: Lifecycle.Event) -> [Lifecycle.Action] {
        let actions = lifecycle.handle(event)
        for action in actions { perform(action) }
        status = lifecycle.status
        return actions
    }

    private func perform(_ action: Lifecycle.Action) {
        switch action {
        case .returnSession, .wait:
            break   // for the `connect()` caller
        case .openTransport(let id, let resume):
            let headers = resume.map { options.headers + [("X-Jetstream-SessionToken", $0.token)] } ?? options.headers
            let connector = connector
            Task { [weak self] in
                let result: Result<any SyncTransport, SyncError>
                do throws(SyncError) {
                    result = .success(try await connector.connect(headers: headers))
                } catch {
                    result = .failure(error)
                }
                guard let self else {
                    if case .success(let transport) = result { await transport.close(code: 1000, reason: "client released") }
                    return
                }
                switch result {
                case .success(let transport): self.handle(.transportOpened(id: id, Connection(transport: transport)))
                case .failure(let error): self.handle(.transportFailed(id: id, error))
                }
            }
        case .startConnection(let connection, let id):
            connection.start(
                onMessages: { [weak self] messages in self?.received(messages, id: id) },
                onClose: { [weak self] closed in self?.handle(.connectionClosed(id: id, closed)) })
        case .closeConnection(let connection, let reason):
            Task { await connection.close(code: 1000, reason: reason) }
        case .sendSessionCreate(let connection):
            // Asks for broadcasts with collections as edits (§8.24); an original server ignores it.
            var params = options.sessionParams
            if options.sendsCollectionEdits { params[SyncFragment.collectionOpsParameter] = true }
            connection.send(.sessionCreate(SessionCreate(version: options.version, params: params)))
        case .startHandshakeTimer(let id):
            startTimer(after: options.connectTimeout) { $0.handle(.handshakeEnded(id: id, .failure(.timedOut))) }
        case .startHealthTimer(let id):
            startTimer(after: options.reconnect.healthyAfter) { $0.handle(.sessionHealthy(id: id)) }
        case .startBackoffTimer(let timer, let attempt):
            startTimer(after: options.reconnect.delay(attempt: attempt)) { $0.handle(.backoffElapsed(timer: timer)) }
        case .cancelTimer:
            timer?.cancel()
            timer = nil
        case .renewSession(let session, let accepted, let connection):
            session.renew(accepted, connection: connection)
        case .resumeSession(let session, let connection):
            session.didResume(connection)
        case .connectionLost(let session):
            session.connectionLost()
        case .messageTooLarge(let session):
            let error = SyncError.stateTooLarge(limit: options.maxMessageBytes)
            lastError = error
            session.messageTooLarge(error)
        case .endSession(let session):
            session.clientClosed()
        case .tick(let session):
            switch session.tick() {
            case .none: break
            case .reconnect: handle(.reconnectRequested(renew: false))
            case .renew: handle(.reconnectRequested(renew: true))
            }
        case .startKeepAlive:
            startKeepAlive()
        case .stopKeepAlive:
            keepAlive?.cancel()
            keepAlive = nil
        case .resolveAttempt(let attempt, let result):
            attempt.resolve(result)
        case .recordError(let error):
            lastError = error
        case .clearError:
            lastError = nil
        case .serverUnavailable:
            connector.serverUnavailable()
        }
    }

    /// Runs `fire` after `delay` on the client's clock, unless the timer is replaced or cancelled
    /// first. The task holds the client only once the delay is over, so a client the app drops
    /// stops reconnecting.
    private func startTimer(after delay: Duration, _ fire: @escaping @MainActor (Client) -> Void) {
        timer?.cancel()
        let timeline = timeline
        timer = Task { [weak self] in
            guard (try? await timeline.sleep(for: delay)) != nil, !Task.isCancelled, let self else { return }
            fire(self)
        }
    }

    /// Pings every `pingInterval` (±10 % so that many clients do not ping in step) while connected.
    private func startKeepAlive() {
        keepAlive?.cancel()
        let timeline = timeline
        let interval = options.pingInterval
        keepAlive = Task { [weak self] in
            while !Task.isCancelled {
                let jitter = Double.random(in: 0.9...1.1)
                guard (try? await timeline.sleep(for: .nanoseconds(Int64(interval.seconds * jitter * 1e9)))) != nil,
                      !Task.isCancelled, let self else { return }
                self.handle(.keepAliveTick)
            }
        }
    }

    private func received(_ messages: [Message], id: Int) {
        switch lifecycle.state {
        case .handshaking(_, let current, _) where current == id:
            for case .sessionCreateReply(let reply) in messages {
                let result: Result<SessionAccepted, SyncError>
                if let token = reply.sessionToken {
                    result = .success(SessionAccepted(token: token, extensions: Set(reply.extensions), limits: reply.limits))
                } else if let error = reply.error, error.type == WireErrorBody.serverUnavailable("").type {
                    result = .failure(.serverUnavailable(error.message))
                } else {
                    result = .failure(.sessionDenied(reply.error?.message ?? "Session creation denied"))
                }
                handle(.handshakeEnded(id: id, result))
                return
            }
        case .connected(let session, let current, _, _) where current == id:
            session.receive(messages)
        default:
            break   // a late frame of an earlier transport
        }
    }

    /// Drops the connection and resumes on a new one (an out-of-order message, a late reply).
    func forceReconnect() {
        handle(.reconnectRequested(renew: false))
    }
}

extension Client {
    /// A full state the session refused (empty, or without its root): nothing of it was applied;
    /// `lastError` says why, also when no fetch was waiting for it.
    func stateRefused(_ error: SyncError) {
        lastError = error
    }
}
