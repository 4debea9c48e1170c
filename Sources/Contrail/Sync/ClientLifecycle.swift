/// The connection lifecycle of a `Client` as one state machine (after NIO's
/// `SocketChannelLifecycleManager`): one enum of states, one transition function that takes an
/// event and returns the actions the client performs. The machine does no I/O and keeps no time;
/// it is generic over the objects it hands around so that its tests can use stand-ins.
///
/// ```
///            connect                opened (new session)        accepted
///   idle ───────────▶ connecting ─────────────────▶ handshaking ─────────▶ connected
///   closed                 │  opened (resume) ───────────────────────────▶    │
///     ▲                    │ failed              failed / closed             │ lost, overdue reply
///     │                    ▼                                                  ▼
///     │ close        (first connect: idle)   waitingToReconnect ◀────────────┘
///     └──── any            ◀─── backoff over ───┘   │ denied (or fatal close, no restart)
///                                                    ▼
///                                                 stopped
/// ```
///
/// Backoff: `failures` (the next delay's exponent) grows with every attempt that fails and every
/// connection that is lost, and starts over only once a connection stayed up for
/// `ReconnectPolicy.healthyAfter` (`sessionHealthy`): a server that accepts sessions and ends them
/// at once (a scope it cannot load, a refusal, a drain) is backed off from exactly like one that
/// cannot be reached. A close with ``JetstreamCloseCode/draining`` (Protocol §8.22) moves the
/// connector on to another server and opens a new session there.
///
/// Transport ids tell the current transport from late events of an earlier one (those are
/// ignored); an event that cannot happen in the current state traps in debug builds and does
/// nothing in release builds.
package struct ClientLifecycle<Session: AnyObject, Connection: AnyObject, Attempt: AnyObject> {
    /// A connect under way: the session it is for, and how it got here.
    package struct Pending {
        /// The session being connected. For a first connect it is not public until the handshake succeeds.
        package var session: Session
        /// What concurrent `connect()` calls wait for; nil when reconnecting an existing session.
        package var attempt: Attempt?
        /// Backoff attempts since the last healthy connection (the next delay's exponent).
        package var failures: Int
        /// Whether this connect opens a new wire session (a handshake) rather than resuming.
        package var renew: Bool

        package init(session: Session, attempt: Attempt?, failures: Int, renew: Bool) {
            self.session = session
            self.attempt = attempt
            self.failures = failures
            self.renew = renew
        }
    }

    /// Where the client stands.
    package enum State {
        /// Never connected: offline, no session.
        case idle
        /// Opening transport `id`.
        case connecting(Pending, id: Int)
        /// `SessionCreate` went out on transport `id`; waiting for the reply (or the connect timeout).
        case handshaking(Pending, id: Int, connection: Connection)
        /// Online with `session` on transport `id`; `failures` counts the back-offs before it, which
        /// stand until the connection has been healthy for `ReconnectPolicy.healthyAfter`.
        case connected(session: Session, id: Int, connection: Connection, failures: Int)
        /// The connection was lost: waiting out backoff timer `timer` before reconnecting.
        case waitingToReconnect(session: Session, failures: Int, renew: Bool, timer: Int)
        /// The server denied the session for good: offline, the session kept (`lastError` says why).
        case stopped(session: Session)
        /// Closed by `close()`: offline, no session; `connect()` opens a new one.
        case closed
    }

    /// What happens to the client.
    package enum Event {
        /// `connect()`: `session` and `attempt` are used when a first connect starts here.
        case connect(session: Session, attempt: Attempt)
        /// Transport `id` opened.
        case transportOpened(id: Int, Connection)
        /// Transport `id` could not be opened.
        case transportFailed(id: Int, SyncError)
        /// The handshake on transport `id` ended: accepted, denied, timed out or closed.
        case handshakeEnded(id: Int, Result<SessionAccepted, SyncError>)
        /// Transport `id` closed (nil: closed normally, without a close frame's code).
        case connectionClosed(id: Int, TransportClosed?)
        /// The session asked to reconnect: an out-of-order message (resume), or a reply that never
        /// came (`renew`: twice for the same request, so open a new session).
        case reconnectRequested(renew: Bool)
        /// Transport `id` stayed connected for `ReconnectPolicy.healthyAfter`: the backoff starts over.
        case sessionHealthy(id: Int)
        /// Backoff timer `timer` ran out.
        case backoffElapsed(timer: Int)
        /// A keep-alive interval passed.
        case keepAliveTick
        /// `close()`, or the client was released.
        case close
    }

    /// What the client does, in order.
    package enum Action {
        /// Returns this session to the `connect()` caller.
        case returnSession(Session)
        /// The `connect()` caller waits for this attempt.
        case wait(Attempt)
        /// Opens transport `id` (resuming `resume`'s session with its token when given).
        case openTransport(id: Int, resume: Session?)
        /// Starts reading and writing transport `id`.
        case startConnection(Connection, id: Int)
        /// Closes a connection (a late transport, a failed handshake, a dropped or superseded one).
        case closeConnection(Connection, reason: String)
        /// Sends `SessionCreate` on the connection.
        case sendSessionCreate(Connection)
        /// Starts the connect timeout of the handshake on transport `id` (replaces any timer).
        case startHandshakeTimer(id: Int)
        /// Starts the timer after which transport `id` counts as healthy (replaces any timer).
        case startHealthTimer(id: Int)
        /// Starts backoff timer `timer` for attempt number `attempt` (replaces any timer).
        case startBackoffTimer(timer: Int, attempt: Int)
        /// Cancels the running timer.
        case cancelTimer
        /// The session takes a new wire session on the connection (`Session.renew`).
        case renewSession(Session, SessionAccepted, Connection)
        /// The session resumes on the connection (`Session.didResume`).
        case resumeSession(Session, Connection)
        /// The session lost its connection (`Session.connectionLost`).
        case connectionLost(Session)
        /// The server sent a message over the client's limit (`Session.messageTooLarge`).
        case messageTooLarge(Session)
        /// The session ends (`Session.clientClosed`).
        case endSession(Session)
        /// Sends the keep-alive and checks reply deadlines (`Session.tick`).
        case tick(Session)
        /// Starts the keep-alive loop (once per session).
        case startKeepAlive
        /// Stops the keep-alive loop.
        case stopKeepAlive
        /// Settles the attempt: its `connect()` callers get the session or the error.
        case resolveAttempt(Attempt, Result<Session, SyncError>)
        /// Records the error that ended or holds up the connection (`Client.lastError`).
        case recordError(SyncError)
        /// Clears `Client.lastError` (a new connect).
        case clearError
        /// Tells the connector its server is unavailable (a cluster fails over).
        case serverUnavailable
    }

    /// The current state.
    package private(set) var state: State = .idle
    /// After a fatal close (4096, 4097), open a new session rather than stop.
    package let restartSessionOnFatalError: Bool
    private var nextID = 0
    /// The server's last close of a live connection (code and reason), and how many closes in a row
    /// it was the same without a keep-alive interval of calm or a healthy spell between them: a
    /// connection the server ends for the same reason again and again (a message it will not take,
    /// resent on every resume) has that close recorded as the client's error (and backs off, as
    /// every loss before a healthy spell does).
    private var lastClose: TransportClosed?
    private var repeatedCloses = 0

    package init(restartSessionOnFatalError: Bool) {
        self.restartSessionOnFatalError = restartSessionOnFatalError
    }

    /// The status the state shows.
    package var status: Client.Status {
        switch state {
        case .idle, .stopped, .closed: .offline
        case .connecting, .handshaking, .waitingToReconnect: .connecting
        case .connected: .online
        }
    }

    /// The public session: none before the first handshake succeeded or after `close()`.
    package var session: Session? {
        switch state {
        case .idle, .closed: nil
        case .connecting(let pending, _), .handshaking(let pending, _, _): pending.attempt == nil ? pending.session : nil
        case .connected(let session, _, _, _), .waitingToReconnect(let session, _, _, _), .stopped(let session): session
        }
    }

    /// The open connection, if any.
    package var connection: Connection? {
        switch state {
        case .handshaking(_, _, let connection), .connected(_, _, let connection, _): connection
        default: nil
        }
    }

    /// Takes `event`, moves to the next state and returns what the client must do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        // connect()
        case (.idle, .connect(let session, let attempt)), (.closed, .connect(let session, let attempt)):
            let id = makeID()
            state = .connecting(Pending(session: session, attempt: attempt, failures: 0, renew: true), id: id)
            return [.clearError, .openTransport(id: id, resume: nil), .wait(attempt)]
        case (.connecting(let pending, _), .connect), (.handshaking(let pending, _, _), .connect):
            if let attempt = pending.attempt { return [.wait(attempt)] }
            return [.returnSession(pending.session)]
        case (.connected(let session, _, _, _), .connect), (.waitingToReconnect(let session, _, _, _), .connect),
             (.stopped(let session), .connect):
            return [.returnSession(session)]

        // A transport opened or failed.
        case (.connecting(let pending, let id), .transportOpened(let opened, let connection)) where opened == id:
            if pending.renew {
                state = .handshaking(pending, id: id, connection: connection)
                return [.startConnection(connection, id: id), .sendSessionCreate(connection), .startHandshakeTimer(id: id)]
            }
            state = .connected(session: pending.session, id: id, connection: connection, failures: pending.failures)
            return [.startConnection(connection, id: id), .resumeSession(pending.session, connection)]
                + healthTimer(id: id, failures: pending.failures)
        case (_, .transportOpened(let id, let connection)):
            // A late transport (the connect it was for ended meanwhile) is closed.
            return late(event, id: id) + [.closeConnection(connection, reason: "client closed")]
        case (.connecting(let pending, let id), .transportFailed(let failed, let error)) where failed == id:
            return failConnect(pending, error: error, connection: nil)
        case (_, .transportFailed(let id, _)):
            return late(event, id: id)

        // The handshake ended.
        case (.handshaking(let pending, let id, let connection), .handshakeEnded(let ended, let result)) where ended == id:
            switch result {
            case .success(let accepted):
                state = .connected(session: pending.session, id: id, connection: connection, failures: pending.failures)
                var actions: [Action] = [.cancelTimer, .renewSession(pending.session, accepted, connection)]
                if let attempt = pending.attempt {
                    actions += [.startKeepAlive, .resolveAttempt(attempt, .success(pending.session))]
                }
                return actions + healthTimer(id: id, failures: pending.failures)
            case .failure(let error):
                return [.cancelTimer] + failConnect(pending, error: error, connection: connection)
            }
        case (_, .handshakeEnded(let id, _)):
            return late(event, id: id)

        // The connection closed.
        case (.handshaking(let pending, let id, let connection), .connectionClosed(let closed, let reason)) where closed == id:
            return [.cancelTimer] + failConnect(pending, error: Self.error(reason), connection: connection)
        case (.connected(let session, let id, _, let failures), .connectionClosed(let closed, let reason)) where closed == id:
            let fatal = reason?.code == JetstreamCloseCode.denied || reason?.code == JetstreamCloseCode.expired
            if fatal && !restartSessionOnFatalError {
                state = .stopped(session: session)
                return [.connectionLost(session), .recordError(Self.error(reason))]
            }
            if reason?.messageTooLarge == true {
                // Resuming would have the server resend the same message: a new session instead,
                // without the fetch whose state did not fit.
                return [.connectionLost(session), .messageTooLarge(session)] + backoff(session, failures: failures, renew: true)
            }
            if reason?.code == JetstreamCloseCode.draining {
                // §8.22: the server keeps no session; a new one, preferably on another server.
                return [.connectionLost(session), .recordError(Self.error(reason)), .serverUnavailable]
                    + backoff(session, failures: failures, renew: true)
            }
            var actions: [Action] = [.connectionLost(session)]
            if countRepeat(reason) > 0 { actions.append(.recordError(Self.error(reason))) }
            return actions + backoff(session, failures: failures, renew: fatal)
        case (_, .connectionClosed(let id, _)):
            return late(event, id: id)

        // The session asks to reconnect (only a live connection's messages and ticks ask).
        case (.connected(let session, _, let connection, let failures), .reconnectRequested(let renew)):
            return [.closeConnection(connection, reason: "reconnecting"), .connectionLost(session)]
                + backoff(session, failures: failures, renew: renew)
        case (_, .reconnectRequested):
            return []   // messages held by `pauseIncoming` and released offline: already reconnecting

        case (.connected(let session, let id, let connection, _), .sessionHealthy(let healthy)) where healthy == id:
            state = .connected(session: session, id: id, connection: connection, failures: 0)
            lastClose = nil
            repeatedCloses = 0
            return []
        case (_, .sessionHealthy(let id)):
            return late(event, id: id)

        // The backoff ran out: reconnect.
        case (.waitingToReconnect(let session, let failures, let renew, let timer), .backoffElapsed(let elapsed)) where elapsed == timer:
            let id = makeID()
            state = .connecting(Pending(session: session, attempt: nil, failures: failures, renew: renew), id: id)
            return [.openTransport(id: id, resume: renew ? nil : session)]
        case (_, .backoffElapsed(let timer)):
            return late(event, id: timer)

        case (.connected(let session, _, _, _), .keepAliveTick):
            lastClose = nil
            repeatedCloses = 0
            return [.tick(session)]
        case (_, .keepAliveTick):
            return []   // offline for now: nothing to keep alive

        // close() ends whatever is under way.
        case (.idle, .close), (.closed, .close):
            state = .closed
            return []
        case (.connecting(let pending, _), .close):
            state = .closed
            return [.stopKeepAlive, .cancelTimer] + closeActions(pending, connection: nil)
        case (.handshaking(let pending, _, let connection), .close):
            state = .closed
            return [.stopKeepAlive, .cancelTimer] + closeActions(pending, connection: connection)
        case (.connected(let session, _, let connection, _), .close):
            state = .closed
            return [.stopKeepAlive, .endSession(session), .closeConnection(connection, reason: "client closed")]
        case (.waitingToReconnect(let session, _, _, _), .close), (.stopped(let session), .close):
            state = .closed
            return [.stopKeepAlive, .cancelTimer, .endSession(session)]
        }
    }

    /// A connect attempt failed: a first connect ends (its callers get the error); a reconnect
    /// backs off and tries again, or stops for a denied session.
    private mutating func failConnect(_ pending: Pending, error: SyncError, connection: Connection?) -> [Action] {
        var actions: [Action] = connection.map { [.closeConnection($0, reason: "")] } ?? []
        if let attempt = pending.attempt {
            state = .idle
            return actions + [.resolveAttempt(attempt, .failure(error))]
        }
        let session = pending.session
        switch error {
        case .sessionDenied:
            state = .stopped(session: session)
            return actions + [.recordError(error)]
        case .serverUnavailable:
            actions += [.recordError(error), .serverUnavailable]
            return actions + backoff(session, failures: pending.failures, renew: pending.renew)
        case .closedByServer(let code, _) where code == JetstreamCloseCode.draining:
            actions += [.recordError(error), .serverUnavailable]
            return actions + backoff(session, failures: pending.failures, renew: true)
        case .closedByServer(let code, _) where code == JetstreamCloseCode.denied || code == JetstreamCloseCode.expired:
            return actions + backoff(session, failures: pending.failures, renew: true)
        default:
            return actions + backoff(session, failures: pending.failures, renew: pending.renew)
        }
    }

    /// Counts a server's close of a live connection: the number of closes in a row before it with
    /// the same code and reason (0 for a new reason, a normal close or a dropped connection).
    private mutating func countRepeat(_ reason: TransportClosed?) -> Int {
        guard let reason, let code = reason.code, code != 1000, code != 1001 else {
            lastClose = nil
            repeatedCloses = 0
            return 0
        }
        repeatedCloses = reason == lastClose ? repeatedCloses + 1 : 0
        lastClose = reason
        return repeatedCloses
    }

    /// The timer that forgives `failures` once transport `id` has been healthy; none when there is
    /// nothing to forgive.
    private func healthTimer(id: Int, failures: Int) -> [Action] {
        failures > 0 ? [.startHealthTimer(id: id)] : []
    }

    /// Waits before the next reconnect: attempt `failures` of the backoff policy.
    private mutating func backoff(_ session: Session, failures: Int, renew: Bool) -> [Action] {
        let timer = makeID()
        state = .waitingToReconnect(session: session, failures: failures + 1, renew: renew, timer: timer)
        return [.startBackoffTimer(timer: timer, attempt: failures)]
    }

    private func closeActions(_ pending: Pending, connection: Connection?) -> [Action] {
        var actions: [Action] = []
        if let attempt = pending.attempt {
            actions.append(.resolveAttempt(attempt, .failure(.closed)))
        } else {
            actions.append(.endSession(pending.session))
        }
        if let connection { actions.append(.closeConnection(connection, reason: "client closed")) }
        return actions
    }

    private mutating func makeID() -> Int {
        nextID += 1
        return nextID
    }

    /// The error a closed transport means.
    static func error(_ closed: TransportClosed?) -> SyncError {
        closed?.code.map { .closedByServer(code: $0, reason: closed?.reason ?? "") }
            ?? .transport(closed?.reason ?? "connection closed")
    }

    /// The transport or timer id the current state waits on, if any.
    private var currentID: Int? {
        switch state {
        case .connecting(_, let id), .handshaking(_, let id, _), .connected(_, let id, _, _): id
        case .waitingToReconnect(_, _, _, let timer): timer
        case .idle, .stopped, .closed: nil
        }
    }

    /// An event about transport or timer `id` that the state does not take. An earlier id's event
    /// came late (its connect or timer was superseded) and is ignored; one about the current id, or
    /// an id never handed out, is a bug in the client: it traps in debug builds and is ignored in
    /// release builds.
    private func late(_ event: Event, id: Int) -> [Action] {
        if id == currentID || id > nextID {
            assertionFailure("ClientLifecycle: illegal \(event) in state \(state)")
        }
        return []
    }
}
