import ContrailSupport
import ContrailWire

/// The presence of one scope on one server (Protocol §8.20): this server's sessions that sent a
/// `Presence` for it (members, each with its latest value and its throttle) and the peers other
/// servers of the cluster relayed (remote, each until its refresh is overdue). Plain state:
/// ``PresenceHub`` owns it and does the sending.
struct PresenceRoom {
    /// One of this server's sessions in the scope.
    struct Member {
        let session: ServerSession
        /// Where the session's messages go.
        let outbox: SessionOutbox
        /// The session's handle for the scope.
        var scopeIndex: Int
        /// Which of the session's connections subscribed (``ServerSession`` counts attachments):
        /// a `Presence` from a newer one gets the snapshot again.
        var attachment: Int
        /// The latest value the session published.
        var value: JSON?
        /// What the other sessions were last shown (nil: nothing, or that it left).
        var shown: JSON?
        /// When the last change was shown, for the throttle.
        var lastShown: ElapsedClock.Instant?
        /// Whether a deferred show is scheduled (the throttle held a change back).
        var flushScheduled = false
        /// Whether the session was silent for the timeout: shown as gone until it is heard again.
        var timedOut = false

        /// The entry the others see now.
        var entry: PresencePeers.Entry {
            PresencePeers.Entry(peer: session.presenceID, user: session.presenceUser, value: timedOut ? nil : value)
        }
    }

    /// A peer of another server of the cluster.
    struct Remote {
        var user: String?
        var value: JSON
        /// The relaying server's id.
        var server: String
        /// When it leaves unless refreshed.
        var expires: ElapsedClock.Instant
    }

    /// This server's sessions, by ``ObjectIdentifier`` of the session.
    var members: [ObjectIdentifier: Member] = [:]
    /// Other servers' peers, by peer id.
    var remote: [String: Remote] = [:]

    /// Every peer with a value as `session` should see it (itself left out): the snapshot.
    func snapshot(for session: ObjectIdentifier) -> [PresencePeers.Entry] {
        var entries: [PresencePeers.Entry] = []
        for (key, member) in members where key != session && !member.timedOut && member.shown != nil {
            entries.append(PresencePeers.Entry(peer: member.session.presenceID, user: member.session.presenceUser,
                                               value: member.shown))
        }
        for (peer, remote) in remote {
            entries.append(PresencePeers.Entry(peer: peer, user: remote.user, value: remote.value))
        }
        return entries.sorted { $0.peer < $1.peer }
    }

    /// Queues `entries` for every member but `except` and the silent ones (they get a snapshot
    /// when heard again: nothing piles up for a dead connection). O(members).
    func send(_ entries: [PresencePeers.Entry], except: ObjectIdentifier?) {
        guard !entries.isEmpty else { return }
        for (key, member) in members where key != except && !member.timedOut {
            member.outbox.enqueueUnsequenced(.message(.presencePeers(PresencePeers(scopeIndex: member.scopeIndex, peers: entries))))
        }
    }
}
