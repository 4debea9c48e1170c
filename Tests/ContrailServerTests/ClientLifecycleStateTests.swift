import Contrail
import ContrailTestSupport
import Testing

/// Every transition of the client's lifecycle state machine, with stand-ins for the session, the
/// connection and the connect attempt.
@Suite struct ClientLifecycleStateTests {
    final class FakeSession: CustomStringConvertible {
        let name: String
        init(_ name: String) { self.name = name }
        var description: String { name }
    }
    final class FakeConnection: CustomStringConvertible {
        let name: String
        init(_ name: String) { self.name = name }
        var description: String { name }
    }
    final class FakeAttempt: CustomStringConvertible {
        var description: String { "attempt" }
    }
    typealias Machine = ClientLifecycle<FakeSession, FakeConnection, FakeAttempt>

    let session = FakeSession("s")
    let attempt = FakeAttempt()
    let accepted = SessionAccepted(token: "t", extensions: [])

    /// The actions, spelled compactly for comparison.
    static func spell(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .returnSession(let s): "returnSession(\(s))"
            case .wait: "wait"
            case .openTransport(let id, let resume): "open(\(id), resume: \(resume.map { "\($0)" } ?? "nil"))"
            case .startConnection(let c, let id): "start(\(c), \(id))"
            case .closeConnection(let c, _): "close(\(c))"
            case .sendSessionCreate(let c): "sessionCreate(\(c))"
            case .startHandshakeTimer(let id): "handshakeTimer(\(id))"
            case .startHealthTimer(let id): "healthTimer(\(id))"
            case .startBackoffTimer(let timer, let attempt): "backoff(timer \(timer), attempt \(attempt))"
            case .cancelTimer: "cancelTimer"
            case .renewSession(let s, _, let c): "renew(\(s), \(c))"
            case .resumeSession(let s, let c): "resume(\(s), \(c))"
            case .connectionLost(let s): "lost(\(s))"
            case .messageTooLarge(let s): "tooLarge(\(s))"
            case .endSession(let s): "end(\(s))"
            case .tick(let s): "tick(\(s))"
            case .startKeepAlive: "startKeepAlive"
            case .stopKeepAlive: "stopKeepAlive"
            case .resolveAttempt(_, .success(let s)): "resolve(\(s))"
            case .resolveAttempt(_, .failure(let e)): "fail(\(e))"
            case .recordError(let e): "record(\(e))"
            case .clearError: "clearError"
            case .serverUnavailable: "serverUnavailable"
            }
        }
    }

    /// A machine that connected `session` on transport 1 (ids: transport 1, timers from 2).
    func connected(restart: Bool = true) -> (Machine, FakeConnection) {
        var machine = Machine(restartSessionOnFatalError: restart)
        let connection = FakeConnection("c1")
        _ = machine.handle(.connect(session: session, attempt: attempt))
        _ = machine.handle(.transportOpened(id: 1, connection))
        _ = machine.handle(.handshakeEnded(id: 1, .success(accepted)))
        return (machine, connection)
    }

    /// A connected machine that lost its connection and is reconnecting on transport 3.
    func reconnecting(renew: Bool) -> Machine {
        var (machine, _) = connected()
        _ = machine.handle(.connectionClosed(id: 1, TransportClosed(code: renew ? JetstreamCloseCode.expired : 1006, reason: "")))
        _ = machine.handle(.backoffElapsed(timer: 2))
        return machine
    }

    // MARK: - A first connect

    @Test func connectFromIdleOpensATransport() {
        var machine = Machine(restartSessionOnFatalError: true)
        #expect(machine.status == .offline && machine.session == nil)
        let actions = machine.handle(.connect(session: session, attempt: attempt))
        #expect(Self.spell(actions) == ["clearError", "open(1, resume: nil)", "wait"])
        guard case .connecting(let pending, 1) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(pending.attempt === attempt && pending.renew && pending.failures == 0)
        #expect(machine.status == .connecting)
        #expect(machine.session == nil, "not public before the handshake")
    }

    @Test func concurrentConnectsJoinTheAttempt() {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        let other = FakeAttempt()
        guard case .wait(let joined) = machine.handle(.connect(session: FakeSession("other"), attempt: other)).first else {
            Issue.record("expected wait"); return
        }
        #expect(joined === attempt)
        _ = machine.handle(.transportOpened(id: 1, FakeConnection("c1")))
        guard case .wait(let joinedAgain) = machine.handle(.connect(session: FakeSession("other"), attempt: other)).first else {
            Issue.record("expected wait"); return
        }
        #expect(joinedAgain === attempt)
    }

    @Test func openedTransportStartsTheHandshake() {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        let actions = machine.handle(.transportOpened(id: 1, FakeConnection("c1")))
        #expect(Self.spell(actions) == ["start(c1, 1)", "sessionCreate(c1)", "handshakeTimer(1)"])
        guard case .handshaking(_, 1, _) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .connecting && machine.connection?.name == "c1")
    }

    @Test func acceptedHandshakeConnects() {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        _ = machine.handle(.transportOpened(id: 1, FakeConnection("c1")))
        let actions = machine.handle(.handshakeEnded(id: 1, .success(accepted)))
        #expect(Self.spell(actions) == ["cancelTimer", "renew(s, c1)", "startKeepAlive", "resolve(s)"])
        guard case .connected(_, 1, _, 0) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .online && machine.session === session)
        #expect(Self.spell(machine.handle(.connect(session: FakeSession("x"), attempt: FakeAttempt()))) == ["returnSession(s)"])
    }

    @Test(arguments: [SyncError.sessionDenied("no"), .timedOut, .serverUnavailable("busy")])
    func failedHandshakeEndsAFirstConnect(error: SyncError) {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        _ = machine.handle(.transportOpened(id: 1, FakeConnection("c1")))
        let actions = machine.handle(.handshakeEnded(id: 1, .failure(error)))
        #expect(Self.spell(actions) == ["cancelTimer", "close(c1)", "fail(\(error))"])
        guard case .idle = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .offline && machine.session == nil)
    }

    @Test func connectionClosedDuringTheHandshakeEndsAFirstConnect() {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        _ = machine.handle(.transportOpened(id: 1, FakeConnection("c1")))
        let actions = machine.handle(.connectionClosed(id: 1, TransportClosed(code: 4096, reason: "denied")))
        #expect(Self.spell(actions) == ["cancelTimer", "close(c1)", "fail(\(SyncError.closedByServer(code: 4096, reason: "denied")))"])
        #expect(machine.status == .offline)
    }

    @Test func failedTransportEndsAFirstConnect() {
        var machine = Machine(restartSessionOnFatalError: true)
        _ = machine.handle(.connect(session: session, attempt: attempt))
        let actions = machine.handle(.transportFailed(id: 1, .transport("refused")))
        #expect(Self.spell(actions) == ["fail(\(SyncError.transport("refused")))"])
        guard case .idle = machine.state else { Issue.record("\(machine.state)"); return }
        // A later connect starts over with a new transport id.
        #expect(Self.spell(machine.handle(.connect(session: session, attempt: attempt))) == ["clearError", "open(2, resume: nil)", "wait"])
    }

    // MARK: - Losing and resuming

    @Test func lostConnectionBacksOffThenResumes() {
        var (machine, _) = connected()
        let lost = machine.handle(.connectionClosed(id: 1, TransportClosed(code: 1006, reason: "gone")))
        #expect(Self.spell(lost) == ["lost(s)", "backoff(timer 2, attempt 0)"])
        guard case .waitingToReconnect(_, 1, false, 2) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .connecting && machine.session === session)
        #expect(Self.spell(machine.handle(.connect(session: FakeSession("x"), attempt: FakeAttempt()))) == ["returnSession(s)"])
        #expect(Self.spell(machine.handle(.keepAliveTick)) == [])
        #expect(Self.spell(machine.handle(.backoffElapsed(timer: 2))) == ["open(3, resume: s)"])
        #expect(machine.status == .connecting && machine.session === session)
        let resumed = machine.handle(.transportOpened(id: 3, FakeConnection("c3")))
        #expect(Self.spell(resumed) == ["start(c3, 3)", "resume(s, c3)", "healthTimer(3)"])
        guard case .connected(_, 3, _, 1) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .online)
    }

    /// A message over the client's limit (an original server's oversized state): resuming would
    /// have the server resend it, so the session is told (its fetch fails) and a new one follows.
    @Test func aMessageOverTheLimitEndsInANewSessionNotAResume() {
        var (machine, _) = connected()
        let closed = machine.handle(.connectionClosed(id: 1, TransportClosed(code: nil, reason: "frame too big", messageTooLarge: true)))
        #expect(Self.spell(closed) == ["lost(s)", "tooLarge(s)", "backoff(timer 2, attempt 0)"])
        #expect(Self.spell(machine.handle(.backoffElapsed(timer: 2))) == ["open(3, resume: nil)"])
        // The control: the same close without the flag resumes.
        var (other, _) = connected()
        #expect(Self.spell(other.handle(.connectionClosed(id: 1, TransportClosed(code: nil, reason: "frame too big")))) == ["lost(s)", "backoff(timer 2, attempt 0)"])
        #expect(Self.spell(other.handle(.backoffElapsed(timer: 2))) == ["open(3, resume: s)"])
    }

    @Test func failedReconnectsBackOffFurtherUntilAConnectionWasHealthy() {
        var machine = reconnecting(renew: false)
        #expect(Self.spell(machine.handle(.transportFailed(id: 3, .transport("refused")))) == ["backoff(timer 4, attempt 1)"])
        _ = machine.handle(.backoffElapsed(timer: 4))
        _ = machine.handle(.transportOpened(id: 5, FakeConnection("c5")))
        // Not healthy yet: another loss backs off further.
        var copy = machine
        #expect(Self.spell(copy.handle(.connectionClosed(id: 5, nil))) == ["lost(s)", "backoff(timer 6, attempt 2)"])
        // A late health timer of an earlier transport forgives nothing.
        #expect(Self.spell(machine.handle(.sessionHealthy(id: 3))) == [])
        guard case .connected(_, 5, _, 2) = machine.state else { Issue.record("\(machine.state)"); return }
        // Healthy for long enough: the backoff starts over.
        #expect(Self.spell(machine.handle(.sessionHealthy(id: 5))) == [])
        #expect(Self.spell(machine.handle(.connectionClosed(id: 5, nil))) == ["lost(s)", "backoff(timer 6, attempt 0)"])
    }

    /// Issue 28: one client opened 502 sessions in 20 s because each accepted handshake reset the
    /// backoff. Sessions the server ends right after they open back off as failed connects do.
    @Test func sessionsEndedRightAfterTheyOpenBackOffFurtherAndFurther() {
        var (machine, _) = connected()
        var id = 1
        var attempts: [String] = []
        for _ in 0..<6 {
            let closed = Self.spell(machine.handle(.connectionClosed(id: id, TransportClosed(code: JetstreamCloseCode.expired, reason: "limit"))))
            attempts += closed.filter { $0.hasPrefix("backoff") }
            _ = machine.handle(.backoffElapsed(timer: id + 1))
            _ = machine.handle(.transportOpened(id: id + 2, FakeConnection("c\(id + 2)")))
            let accepted = Self.spell(machine.handle(.handshakeEnded(id: id + 2, .success(accepted))))
            #expect(accepted == ["cancelTimer", "renew(s, c\(id + 2))", "healthTimer(\(id + 2))"])
            id += 2
        }
        #expect(attempts == (0..<6).map { "backoff(timer \($0 * 2 + 2), attempt \($0))" })
        // Positive control: once a session stayed up, the next loss starts over.
        _ = machine.handle(.sessionHealthy(id: id))
        #expect(Self.spell(machine.handle(.connectionClosed(id: id, nil))).last == "backoff(timer \(id + 1), attempt 0)")
    }

    @Test func aDrainCloseMovesOnAndOpensANewSession() {
        var (machine, _) = connected()
        let drained = TransportClosed(code: JetstreamCloseCode.draining, reason: "draining")
        let recorded = "record(\(SyncError.closedByServer(code: JetstreamCloseCode.draining, reason: "draining")))"
        let actions = machine.handle(.connectionClosed(id: 1, drained))
        #expect(Self.spell(actions) == ["lost(s)", recorded, "serverUnavailable", "backoff(timer 2, attempt 0)"])
        guard case .waitingToReconnect(_, 1, true, 2) = machine.state else { Issue.record("\(machine.state)"); return }
        // A server still draining refuses the new connection too: on to the next, backing off further.
        _ = machine.handle(.backoffElapsed(timer: 2))
        _ = machine.handle(.transportOpened(id: 3, FakeConnection("c3")))
        let refused = machine.handle(.connectionClosed(id: 3, drained))
        #expect(Self.spell(refused) == ["cancelTimer", "close(c3)", recorded, "serverUnavailable", "backoff(timer 4, attempt 1)"])
        // Positive control: without restart on fatal errors a drain still reconnects (it is not fatal).
        var (other, _) = connected(restart: false)
        #expect(Self.spell(other.handle(.connectionClosed(id: 1, drained))).last == "backoff(timer 2, attempt 0)")
    }

    @Test func reconnectRequestsDropTheConnection() {
        for renew in [false, true] {
            var (machine, _) = connected()
            let actions = machine.handle(.reconnectRequested(renew: renew))
            #expect(Self.spell(actions) == ["close(c1)", "lost(s)", "backoff(timer 2, attempt 0)"])
            guard case .waitingToReconnect(_, 1, renew, 2) = machine.state else { Issue.record("\(machine.state)"); return }
            // Requests from messages released later (offline) change nothing.
            #expect(Self.spell(machine.handle(.reconnectRequested(renew: false))) == [])
            #expect(Self.spell(machine.handle(.sessionHealthy(id: 1))) == [], "late: transport 1 is gone")
            guard case .waitingToReconnect(_, 1, renew, 2) = machine.state else { Issue.record("\(machine.state)"); return }
        }
    }

    @Test func keepAliveTicksOnlyWhileConnected() {
        var (machine, _) = connected()
        #expect(Self.spell(machine.handle(.keepAliveTick)) == ["tick(s)"])
        var idle = Machine(restartSessionOnFatalError: true)
        #expect(Self.spell(idle.handle(.keepAliveTick)) == [])
    }

    // MARK: - New sessions

    @Test func fatalCloseRenewsTheSession() {
        var machine = reconnecting(renew: true)
        guard case .connecting(let pending, 3) = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(pending.renew && pending.attempt == nil)
        #expect(Self.spell(machine.handle(.transportOpened(id: 3, FakeConnection("c3")))) == ["start(c3, 3)", "sessionCreate(c3)", "handshakeTimer(3)"])
        #expect(machine.session === session, "the session stays public while it is renewed")
        #expect(Self.spell(machine.handle(.handshakeEnded(id: 3, .success(accepted)))) == ["cancelTimer", "renew(s, c3)", "healthTimer(3)"])
        guard case .connected(_, 3, _, 1) = machine.state else { Issue.record("\(machine.state)"); return }
    }

    @Test func fatalCloseWithoutRestartStops() {
        var (machine, _) = connected(restart: false)
        let actions = machine.handle(.connectionClosed(id: 1, TransportClosed(code: JetstreamCloseCode.denied, reason: "no")))
        #expect(Self.spell(actions) == ["lost(s)", "record(\(SyncError.closedByServer(code: JetstreamCloseCode.denied, reason: "no")))"])
        guard case .stopped = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .offline && machine.session === session)
        #expect(Self.spell(machine.handle(.connect(session: FakeSession("x"), attempt: FakeAttempt()))) == ["returnSession(s)"])
        // Positive control: a non-fatal close reconnects.
        var (other, _) = connected(restart: false)
        #expect(Self.spell(other.handle(.connectionClosed(id: 1, TransportClosed(code: 1001, reason: "")))) == ["lost(s)", "backoff(timer 2, attempt 0)"])
    }

    @Test func deniedRenewalStops() {
        var machine = reconnecting(renew: true)
        _ = machine.handle(.transportOpened(id: 3, FakeConnection("c3")))
        let actions = machine.handle(.handshakeEnded(id: 3, .failure(.sessionDenied("no"))))
        #expect(Self.spell(actions) == ["cancelTimer", "close(c3)", "record(\(SyncError.sessionDenied("no")))"])
        guard case .stopped = machine.state else { Issue.record("\(machine.state)"); return }
        #expect(machine.status == .offline)
    }

    @Test func unavailableServerIsReportedAndRetried() {
        var machine = reconnecting(renew: true)
        _ = machine.handle(.transportOpened(id: 3, FakeConnection("c3")))
        let actions = machine.handle(.handshakeEnded(id: 3, .failure(.serverUnavailable("busy"))))
        #expect(Self.spell(actions) == ["cancelTimer", "close(c3)", "record(\(SyncError.serverUnavailable("busy")))",
                                        "serverUnavailable", "backoff(timer 4, attempt 1)"])
        guard case .waitingToReconnect(_, 2, true, 4) = machine.state else { Issue.record("\(machine.state)"); return }
    }

    @Test func fatalCloseOfAResumeRenewsNext() {
        var machine = reconnecting(renew: false)
        let actions = machine.handle(.transportFailed(id: 3, .closedByServer(code: JetstreamCloseCode.expired, reason: "")))
        #expect(Self.spell(actions) == ["backoff(timer 4, attempt 1)"])
        guard case .waitingToReconnect(_, 2, true, 4) = machine.state else { Issue.record("\(machine.state)"); return }
        // Positive control: any other failure keeps resuming.
        var other = reconnecting(renew: false)
        _ = other.handle(.transportFailed(id: 3, .timedOut))
        guard case .waitingToReconnect(_, 2, false, 4) = other.state else { Issue.record("\(other.state)"); return }
    }

    @Test func handshakeTimeoutOrCloseOfARenewalRetries() {
        var machine = reconnecting(renew: true)
        _ = machine.handle(.transportOpened(id: 3, FakeConnection("c3")))
        #expect(Self.spell(machine.handle(.connectionClosed(id: 3, nil))) == ["cancelTimer", "close(c3)", "backoff(timer 4, attempt 1)"])
        guard case .waitingToReconnect(_, 2, true, 4) = machine.state else { Issue.record("\(machine.state)"); return }
    }

    // MARK: - Closing

    @Test func closeEndsEveryState() {
        var idle = Machine(restartSessionOnFatalError: true)
        #expect(Self.spell(idle.handle(.close)) == [])
        guard case .closed = idle.state else { Issue.record("\(idle.state)"); return }

        var connecting = Machine(restartSessionOnFatalError: true)
        _ = connecting.handle(.connect(session: session, attempt: attempt))
        #expect(Self.spell(connecting.handle(.close)) == ["stopKeepAlive", "cancelTimer", "fail(\(SyncError.closed))"])

        var handshaking = Machine(restartSessionOnFatalError: true)
        _ = handshaking.handle(.connect(session: session, attempt: attempt))
        _ = handshaking.handle(.transportOpened(id: 1, FakeConnection("c1")))
        #expect(Self.spell(handshaking.handle(.close)) == ["stopKeepAlive", "cancelTimer", "fail(\(SyncError.closed))", "close(c1)"])

        var (online, _) = connected()
        #expect(Self.spell(online.handle(.close)) == ["stopKeepAlive", "end(s)", "close(c1)"])
        #expect(online.status == .offline && online.session == nil && online.connection == nil)

        var waiting = reconnecting(renew: false)
        _ = waiting.handle(.transportFailed(id: 3, .timedOut))
        #expect(Self.spell(waiting.handle(.close)) == ["stopKeepAlive", "cancelTimer", "end(s)"])

        var resuming = reconnecting(renew: false)
        #expect(Self.spell(resuming.handle(.close)) == ["stopKeepAlive", "cancelTimer", "end(s)"])

        var stopped = connected(restart: false).0
        _ = stopped.handle(.connectionClosed(id: 1, TransportClosed(code: JetstreamCloseCode.expired, reason: "")))
        #expect(Self.spell(stopped.handle(.close)) == ["stopKeepAlive", "cancelTimer", "end(s)"])
        guard case .closed = stopped.state else { Issue.record("\(stopped.state)"); return }
        #expect(Self.spell(stopped.handle(.close)) == [], "closing twice does nothing")
    }

    @Test func connectAfterCloseOpensANewSession() {
        var (machine, _) = connected()
        _ = machine.handle(.close)
        let fresh = FakeSession("s2")
        #expect(Self.spell(machine.handle(.connect(session: fresh, attempt: FakeAttempt()))) == ["clearError", "open(2, resume: nil)", "wait"])
        #expect(machine.session == nil && machine.status == .connecting)
    }

    // MARK: - Late and illegal events

    @Test func lateEventsOfSupersededTransportsAndTimersAreIgnored() {
        var machine = reconnecting(renew: false)   // transport 1 was lost, timer 2 ran out, transport 3 opening
        // A transport that opens after its connect was superseded is closed.
        #expect(Self.spell(machine.handle(.transportOpened(id: 1, FakeConnection("late")))) == ["close(late)"])
        #expect(Self.spell(machine.handle(.transportFailed(id: 1, .timedOut))) == [])
        #expect(Self.spell(machine.handle(.handshakeEnded(id: 1, .success(accepted)))) == [])
        #expect(Self.spell(machine.handle(.connectionClosed(id: 1, nil))) == [])
        #expect(Self.spell(machine.handle(.backoffElapsed(timer: 2))) == [])
        guard case .connecting(_, 3) = machine.state else { Issue.record("\(machine.state)"); return }
        // After close, a transport still opening is closed when it arrives.
        _ = machine.handle(.close)
        #expect(Self.spell(machine.handle(.transportOpened(id: 3, FakeConnection("c3")))) == ["close(c3)"])
        guard case .closed = machine.state else { Issue.record("\(machine.state)"); return }
    }

    @Test func anIllegalEventTrapsInDebugBuilds() async {
        #if DEBUG
        await #expect(processExitsWith: .failure) {
            var (machine, _) = ClientLifecycleStateTests().connected()
            _ = machine.handle(.transportOpened(id: 1, FakeConnection("again")))   // transport 1 opened already
        }
        #endif
        // Positive control: the same event about an earlier transport is a late one, ignored.
        var (machine, _) = connected()
        _ = machine.handle(.reconnectRequested(renew: false))
        _ = machine.handle(.backoffElapsed(timer: 2))
        #expect(Self.spell(machine.handle(.transportOpened(id: 1, FakeConnection("again")))) == ["close(again)"])
    }
}
