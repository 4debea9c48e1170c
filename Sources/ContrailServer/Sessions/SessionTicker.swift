import ContrailSupport
import ContrailWebSocket
import Foundation

/// The server's one clock for its sessions: sends each attached connection's keep-alive `Ping` and
/// ends sessions idle for `sessionExpiry` or whose credential expired, from a single task, instead of two sleeping tasks per
/// session (each of which kept its stack and a timer: kilobytes per idle session).
///
/// It ticks every eighth of the shorter of the two intervals, so a ping goes out at most that late
/// (pings are spread by ±10% jitter, as before) and an idle or expired session ends at most that late. Each tick
/// is O(attached connections + sessions) under a short lock; the work it finds runs outside the lock.
final class SessionTicker: Sendable {
    private struct Pinged {
        let outbox: SessionOutbox
        var due: ElapsedClock.Instant
    }

    private struct State {
        var pinged: [ObjectIdentifier: Pinged] = [:]
        var sessions: [ObjectIdentifier: ServerSession] = [:]
        var task: Task<Void, Never>?
        var stopped = false
    }

    private let state = SanitizerVisibleMutex(State())
    private let pingInterval: Duration
    private let expiry: Duration
    private let period: Duration
    private let clock: ElapsedClock

    init(pingInterval: Duration, expiry: Duration, clock: ElapsedClock) {
        self.pingInterval = pingInterval
        self.expiry = expiry
        self.clock = clock
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

    /// One tick: pings the connections due and hands idle and expired sessions their expiry.
    private func tick() {
        let now = clock.now
        let (toPing, idle) = state.withLock { state -> ([SessionOutbox], [ServerSession]) in
            var toPing: [SessionOutbox] = []
            for (key, entry) in state.pinged where entry.due <= now {
                toPing.append(entry.outbox)
                state.pinged[key]?.due = now + jittered()
            }
            let idle = state.sessions.values.filter { session in
                now - session.idleSince >= expiry || session.credentialDeadline.map { now >= $0 } == true
            }
            for session in idle { state.sessions[ObjectIdentifier(session)] = nil }
            return (toPing, idle)
        }
        for outbox in toPing { outbox.enqueuePing() }
        for session in idle {
            // The session checks again (a frame may have just arrived) and is watched again if still alive.
            Task { [expiry] in
                if await !session.expireIfIdle(expiry) { self.watch(session) }
            }
        }
    }
}
