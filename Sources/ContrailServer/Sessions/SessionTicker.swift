import ContrailSupport
import ContrailWire
import ContrailWebSocket
import Foundation

/// The server's one clock for its sessions: sends each attached connection's keep-alive `Ping` and
/// ends sessions idle for `sessionExpiry` or whose credential expired, from a single task, instead of two sleeping tasks per
/// session (each of which kept its stack and a timer: kilobytes per idle session).
///
/// It ticks every eighth of the shorter of the two intervals, so a ping goes out at most that late
/// (pings are spread by ±10% jitter, as before) and an idle or expired session ends at most that late. Each tick
/// is O(attached connections + sessions) under a short lock; the work it finds runs outside the lock.
///
/// It also keeps sessions whose clients went away cheap:
/// - Their memory together is bounded (`maxWaitingBytes`, estimated as ``waitingSessionOverhead`` each
///   plus their unacknowledged messages): past it, those that have waited longest end first (logged),
///   O(waiting × log waiting) on the ticks that find the bound exceeded.
/// - After ``trimAfterClosedConnections`` connections closed, at most once per ``trimInterval``, it
///   hands the allocator's free pages back to the system (``Platform/releaseFreeMemory()``): a closed
///   connection's buffers are freed, but the pages around a waiting session's few objects would
///   otherwise stay resident.
final class SessionTicker: Sendable {
    /// What a waiting session is estimated to hold besides its unacknowledged messages (its session,
    /// outbox, subscriptions and token; measured by `contrail bench connections` at about 9 KiB).
    static let waitingSessionOverhead = 8 << 10
    /// Closed connections after which the ticker returns free memory to the system.
    static let trimAfterClosedConnections = 256
    /// The least time between two returns of free memory.
    static let trimInterval: Duration = .seconds(10)

    private struct Pinged {
        let outbox: SessionOutbox
        var due: ElapsedClock.Instant
    }

    private struct State {
        var pinged: [ObjectIdentifier: Pinged] = [:]
        var sessions: [ObjectIdentifier: ServerSession] = [:]
        var task: Task<Void, Never>?
        var stopped = false
        /// Connections closed since free memory was last returned to the system.
        var closedSinceTrim = 0
        var lastTrim: ElapsedClock.Instant?
    }

    private let state = SanitizerVisibleMutex(State())
    private let pingInterval: Duration
    private let expiry: Duration
    private let period: Duration
    private let maxWaitingBytes: Int
    private let clock: ElapsedClock
    private let log: ServerLog

    init(pingInterval: Duration, expiry: Duration, maxWaitingBytes: Int, clock: ElapsedClock, log: ServerLog) {
        self.pingInterval = pingInterval
        self.expiry = expiry
        self.maxWaitingBytes = maxWaitingBytes
        self.clock = clock
        self.log = log
        period = max(.milliseconds(1), min(pingInterval, expiry) / 8)
    }

    /// Pings `outbox` every `pingInterval` (±10%) until ``stopPinging(_:)`` with the same `key`.
    func startPinging(_ outbox: SessionOutbox, key: ObjectIdentifier) {
        let due = clock.now + jittered()
        startIfNeeded { $0.pinged[key] = Pinged(outbox: outbox, due: due) }
    }

    /// Stops the pings of `key`.
    func stopPinging(key: ObjectIdentifier) {
        _ = state.withLock { $0.pinged.removeValue(forKey: key) }
    }

    /// Watches `session` for idleness (``ServerSession/idleSince``) until it ends.
    func watch(_ session: ServerSession) {
        startIfNeeded { $0.sessions[ObjectIdentifier(session)] = session }
    }

    /// Stops watching `session`.
    func forget(_ session: ServerSession) {
        _ = state.withLock { $0.sessions.removeValue(forKey: ObjectIdentifier(session)) }
    }

    /// Counts a closed connection (for returning free memory, see the type's comment).
    func connectionClosed() {
        state.withLock { $0.closedSinceTrim += 1 }
    }

    /// Stops ticking and forgets everything (server stop).
    func stop() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            state.pinged = [:]
            state.sessions = [:]
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }

    /// Ends the sessions that have waited longest until the waiting ones together fit in
    /// `maxWaitingBytes` (`idle` ones end anyway). O(sessions) to sum, plus a sort when over.
    private func endLongestWaiting(sparing idle: [ServerSession]) {
        let waiting = state.withLock { state in state.sessions.values.filter(\.isWaiting) }
        func cost(_ session: ServerSession) -> Int { Self.waitingSessionOverhead + session.outbox.unackedBytes }
        var total = waiting.reduce(0) { $0 + cost($1) }
        guard total > maxWaitingBytes else { return }
        let spared = Set(idle.map(ObjectIdentifier.init))
        var ended: [ServerSession] = []
        for session in waiting.sorted(by: { $0.idleSince < $1.idleSince }) where total > maxWaitingBytes {
            total -= cost(session)
            guard !spared.contains(ObjectIdentifier(session)) else { continue }
            ended.append(session)
        }
        log.write("session.waiting_bound", level: .warning, "\(ended.count) sessions waiting for their clients ended, longest-waiting first: together they held more than \(maxWaitingBytes >> 20) MiB")
        let reason = WireErrorBody.limitExceeded("The server holds too many sessions waiting for their clients; start a new session")
        for session in ended {
            forget(session)
            Task { await session.expire(reason: reason) }
        }
    }

    private func jittered() -> Duration { pingInterval * Double.random(in: 0.9...1.1) }

    private func startIfNeeded(_ register: (inout State) -> Void) {
        state.withLock { state in
            guard !state.stopped else { return }
            register(&state)
            guard state.task == nil else { return }
            let period = self.period
            let clock = self.clock
            state.task = Task { [weak self] in
                while !Task.isCancelled {
                    do { try await clock.sleep(for: period) } catch { return }
                    guard let self else { return }
                    self.tick()
                }
            }
        }
    }

    /// One tick: pings the connections due, hands idle and expired sessions their expiry, ends the
    /// longest-waiting sessions past the bound, and returns free memory after many closed connections.
    private func tick() {
        let now = clock.now
        let (toPing, idle, trim) = state.withLock { state -> ([SessionOutbox], [ServerSession], Bool) in
            var toPing: [SessionOutbox] = []
            for (key, entry) in state.pinged where entry.due <= now {
                toPing.append(entry.outbox)
                state.pinged[key]?.due = now + jittered()
            }
            let idle = state.sessions.values.filter { session in
                now - session.idleSince >= expiry || session.credentialDeadline.map { now >= $0 } == true
            }
            for session in idle { state.sessions[ObjectIdentifier(session)] = nil }
            let trim = state.closedSinceTrim >= Self.trimAfterClosedConnections
                && state.lastTrim.map { now - $0 >= Self.trimInterval } != false
            if trim {
                state.closedSinceTrim = 0
                state.lastTrim = now
            }
            return (toPing, idle, trim)
        }
        for outbox in toPing { outbox.enqueuePing() }
        endLongestWaiting(sparing: idle)
        if trim { Platform.releaseFreeMemory() }
        for session in idle {
            // The session checks again (a frame may have just arrived) and is watched again if still alive.
            Task { [expiry] in
                if await !session.expireIfIdle(expiry) { self.watch(session) }
            }
        }
    }
}
