import ContrailSupport
import ContrailWire
import Foundation

/// Every scope's presence on this server (Protocol §8.20): who is in each scope and their latest
/// ephemeral values. Nothing here touches a scope, its change sets or its log: presence goes from
/// a session's `Presence` message to the other sessions' outboxes as unsequenced `PresencePeers`,
/// and, in a cluster, through NATS core subjects (``PresenceRelay``), never the JetStream log.
///
/// - Throttle: a session's changes in a scope are shown at most ``ServerLimits/presenceUpdatesPerSecond``
///   times a second; one that comes sooner waits, and a newer one replaces it (latest wins).
/// - Size: a value longer than ``ServerLimits/maxPresenceBytes`` as JSON is dropped (the previous one stands).
/// - Leaving: a session leaves a scope when its connection ends, it detaches the scope, or it ends;
///   and is shown as gone while nothing came from it for ``ServerOptions/presenceTimeout`` (a
///   dead connection the server has not noticed), back when it is heard again. Peers of another
///   server leave when that server stops refreshing them for the same timeout.
/// - Grants: only a session that fetched the scope (so may read it) has its scope index: publishing
///   and seeing need read access, not write.
///
/// Work per message is O(sessions in the scope); a sweep every quarter of the timeout, while any
/// scope has presence, is O(members and remote peers).
actor PresenceHub {
    private let clock: ElapsedClock
    private let limits: ServerLimits
    private let timeout: Duration
    private let log: ServerLog
    private let relay: PresenceRelay?
    private var rooms: [String: PresenceRoom] = [:]
    /// The scopes each session is a member of, for its disconnect.
    private var joined: [ObjectIdentifier: Set<String>] = [:]
    private var sweeper: Task<Void, Never>?
    /// Oversized values dropped (the first and every 1000th are logged).
    private var oversized = 0
    private var isStopped = false

    init(clock: ElapsedClock, limits: ServerLimits, timeout: Duration, log: ServerLog, cluster: ClusterLink?) {
        self.clock = clock
        self.limits = limits
        self.timeout = timeout
        self.log = log
        relay = cluster.map { PresenceRelay(link: $0, log: log) }
    }

    private var interval: Duration { .seconds(1) / max(1, limits.presenceUpdatesPerSecond) }

    // MARK: From sessions

    /// A `Presence` from `session` (on its connection `attachment`) for the scope `scope`, which it
    /// holds as `scopeIndex`. The first one of a connection subscribes it and gets the snapshot.
    func publish(_ value: JSON?, scope: String, scopeIndex: Int, from session: ServerSession, attachment: Int) {
        guard !isStopped else { return }
        let key = ObjectIdentifier(session)
        if let value, value.encodedSizeLowerBound > limits.maxPresenceBytes
            || (value.encodedSizeUpperBound > limits.maxPresenceBytes && value.serialized().count > limits.maxPresenceBytes)
        {
            oversized += 1
            if oversized % 1000 == 1 {
                log.write("presence.dropped", level: .warning, session: session.number, scope: scope, "session \(session.number): presence value in '\(scope)' over \(limits.maxPresenceBytes) bytes dropped (\(oversized) so far)")
            }
            return
        }
        var room = rooms[scope] ?? PresenceRoom()
        let isNewRoom = rooms[scope] == nil
        var member = room.members[key]
            ?? PresenceRoom.Member(session: session, outbox: session.outbox, scopeIndex: scopeIndex, attachment: attachment)
        let subscribes = room.members[key] == nil || member.attachment != attachment || member.scopeIndex != scopeIndex
            || member.timedOut
        if member.timedOut {
            // Heard again: back, shown afresh, and told who is here (it was sent nothing while silent).
            member.timedOut = false
            member.shown = nil
            member.lastShown = nil
        }
        member.scopeIndex = scopeIndex
        member.attachment = attachment
        member.value = value
        room.members[key] = member
        rooms[scope] = room
        joined[key, default: []].insert(scope)
        if subscribes {
            session.outbox.enqueueUnsequenced(.message(.presencePeers(PresencePeers(
                scopeIndex: scopeIndex, replace: true, peers: room.snapshot(for: key)))))
        }
        if isNewRoom {
            relay?.join(scope, hub: self)
            startSweeping()
        }
        show(key, in: scope)
    }

    /// `session` detached `scope` (or ended): it leaves it.
    func leave(scope: String, session: ServerSession) {
        let key = ObjectIdentifier(session)
        joined[key]?.remove(scope)
        if joined[key]?.isEmpty == true { joined[key] = nil }
        remove(key, from: scope)
    }

    /// The connection `attachment` of `session` ended, or the session did (nil): it leaves every
    /// scope it subscribed through that connection.
    func disconnected(_ session: ServerSession, attachment: Int?) {
        let key = ObjectIdentifier(session)
        guard let scopes = joined[key] else { return }
        for scope in scopes {
            guard let member = rooms[scope]?.members[key], attachment == nil || member.attachment == attachment else { continue }
            joined[key]?.remove(scope)
            remove(key, from: scope)
        }
        if joined[key]?.isEmpty == true { joined[key] = nil }
    }

    /// Stops the sweep and the relay (server stop).
    func stop() async {
        isStopped = true
        sweeper?.cancel()
        sweeper = nil
        rooms = [:]
        joined = [:]
        await relay?.stop()
    }

    // MARK: Showing

    /// Shows `key`'s latest value in `scope` to the others now, or when the throttle allows.
    private func show(_ key: ObjectIdentifier, in scope: String) {
        guard var member = rooms[scope]?.members[key], !member.timedOut, member.value != member.shown else { return }
        let now = clock.now
        if let last = member.lastShown, now - last < interval {
            guard !member.flushScheduled else { return }
            member.flushScheduled = true
            rooms[scope]?.members[key] = member
            let due = last + interval
            let clock = clock
            Task { [weak self] in
                guard (try? await clock.sleep(until: due)) != nil, let self else { return }
                await self.flush(key, in: scope)
            }
            return
        }
        member.lastShown = now
        member.shown = member.value
        rooms[scope]?.members[key] = member
        let entry = member.entry
        rooms[scope]?.send([entry], except: key)
        relay?.publish(entry, scope: scope)
    }

    private func flush(_ key: ObjectIdentifier, in scope: String) {
        guard rooms[scope]?.members[key] != nil else { return }
        rooms[scope]?.members[key]?.flushScheduled = false
        show(key, in: scope)
    }

    private func remove(_ key: ObjectIdentifier, from scope: String) {
        guard var room = rooms[scope], let member = room.members.removeValue(forKey: key) else { return }
        if member.shown != nil, !member.timedOut {
            var gone = member.entry
            gone.value = nil
            room.send([gone], except: nil)
            relay?.publish(gone, scope: scope)
        }
        if room.members.isEmpty {
            rooms[scope] = nil
            relay?.leave(scope)
        } else {
            rooms[scope] = room
        }
    }

    // MARK: From other servers

    /// A peer another server relayed: joined or changed (`value`), or gone (nil).
    func relayed(_ entry: PresencePeers.Entry, server: String, scope: String) {
        guard var room = rooms[scope] else { return }
        if let value = entry.value {
            let previous = room.remote[entry.peer]
            room.remote[entry.peer] = PresenceRoom.Remote(user: entry.user, value: value, server: server, expires: clock.now + timeout)
            rooms[scope] = room
            if previous?.value != value || previous?.user != entry.user { room.send([entry], except: nil) }
        } else if room.remote.removeValue(forKey: entry.peer) != nil {
            rooms[scope] = room
            room.send([entry], except: nil)
        }
    }

    /// Another server asked for every peer of `scope` (it just joined it): this server's are relayed again.
    func relayAll(scope: String) {
        guard let room = rooms[scope] else { return }
        for member in room.members.values where member.shown != nil && !member.timedOut {
            relay?.publish(member.entry, scope: scope)
        }
    }

    // MARK: Timeouts

    private func startSweeping() {
        guard sweeper == nil else { return }
        let period = max(.milliseconds(1), timeout / 4)
        let clock = clock
        sweeper = Task { [weak self] in
            while !Task.isCancelled {
                guard (try? await clock.sleep(for: period)) != nil, let self else { return }
                guard await self.sweep() else { return }
            }
        }
    }

    /// Shows sessions silent for the timeout as gone (and heard ones as back), drops remote peers
    /// not refreshed, and refreshes this server's peers on the relay. False (and the sweep ends)
    /// when no scope has presence left.
    private func sweep() -> Bool {
        guard !rooms.isEmpty, !isStopped else {
            sweeper = nil
            return false
        }
        let now = clock.now
        for scope in Array(rooms.keys) {
            guard var room = rooms[scope] else { continue }
            var changes: [PresencePeers.Entry] = []
            for (key, member) in room.members {
                let silent = now - member.session.idleSince >= timeout
                guard silent != member.timedOut else { continue }
                room.members[key]?.timedOut = silent
                if silent {
                    log.write("presence.silent", session: member.session.number, scope: scope, "session \(member.session.number): silent for \(timeout); its presence in '\(scope)' is shown as gone")
                } else {
                    member.outbox.enqueueUnsequenced(.message(.presencePeers(PresencePeers(
                        scopeIndex: member.scopeIndex, replace: true, peers: room.snapshot(for: key)))))
                }
                if member.shown != nil {
                    var entry = member.entry
                    entry.value = silent ? nil : member.shown
                    changes.append(entry)
                    room.send([entry], except: key)
                }
            }
            for (peer, remote) in room.remote where remote.expires <= now {
                room.remote[peer] = nil
                room.send([PresencePeers.Entry(peer: peer, user: remote.user, value: nil)], except: nil)
            }
            rooms[scope] = room
            for entry in changes where entry.value == nil { relay?.publish(entry, scope: scope) }
            relayAll(scope: scope)   // the refresh (and whoever came back)
        }
        relay?.reconcile()
        return true
    }
}
