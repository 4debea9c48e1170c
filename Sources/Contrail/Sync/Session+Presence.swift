import ContrailSupport

/// Presence (Protocol §8.20) on a session: a scope's ``ScopePresence`` goes out as an unsequenced
/// `Presence` once the scope is attached, to a server that lists the extension (never to a Jetstream
/// server), at most `presenceUpdatesPerSecond` times a second (a change in between waits and the
/// latest wins), and again after every reconnect, since the server drops a connection's presence
/// when it ends. The other sessions' `PresencePeers` update the scope's peers; they all leave when
/// the connection is lost.
extension Session {
    /// Starts carrying `subscription`'s presence.
    func listenToPresence(_ subscription: ScopeSubscription) {
        applyPresenceLimits(to: subscription.scope.presence)
        subscription.listenToPresence { [weak self, weak subscription] in
            guard let self, let subscription else { return }
            self.sendPresence(subscription, subscribing: false)
        }
    }

    /// Sends `subscription`'s presence if it is active, the scope attached, the connection up and the
    /// server offers presence. `subscribing` (the first on a connection): sent now, whatever the
    /// throttle; otherwise at most once per interval, the deferred one carrying the latest value.
    func sendPresence(_ subscription: ScopeSubscription, subscribing: Bool) {
        let presence = subscription.scope.presence
        guard presence.isActive, serverExtensions.contains(PresenceUpdate.typeName), let connection, !isHolding,
              subscription.isAttached, let scopeIndex = subscription.scopeIndex else { return }
        let now = timeline.elapsed
        let interval = Duration.seconds(1) / max(1, presence.updatesPerSecond)
        if !subscribing, let last = subscription.presenceSentAt, now - last < interval {
            guard subscription.presenceFlush == nil else { return }
            let timeline = timeline
            subscription.presenceFlush = Task { [weak self, weak subscription] in
                guard (try? await timeline.sleep(for: interval - (now - last))) != nil, let self, let subscription else { return }
                subscription.presenceFlush = nil
                self.sendPresence(subscription, subscribing: false)
            }
            return
        }
        subscription.presenceFlush?.cancel()
        subscription.presenceFlush = nil
        subscription.presenceSentAt = now
        connection.send(.presence(PresenceUpdate(scopeIndex: scopeIndex, value: presence.value)))
    }

    /// After a resume: the server forgot the old connection's presence, so every scope's goes again.
    func resendPresence() {
        for subscription in subscriptions where subscription.isAttached {
            sendPresence(subscription, subscribing: true)
        }
    }

    /// The other sessions' presence in one scope.
    func receivePresence(_ message: PresencePeers) {
        guard let subscription = byScopeIndex[message.scopeIndex], subscription.isAttached else { return }
        subscription.scope.presence.apply(message.peers.map { ($0.peer, $0.user, $0.value) }, replace: message.replace)
    }

    /// The connection is gone (or the wire session renewed): every peer leaves, nothing waits to go out.
    func dropPresence() {
        for subscription in subscriptions {
            subscription.presenceFlush?.cancel()
            subscription.presenceFlush = nil
            subscription.presenceSentAt = nil
            subscription.scope.presence.removeAllPeers()
            applyPresenceLimits(to: subscription.scope.presence)
        }
    }

    /// The server's advertised presence limits (Protocol §8.19, §8.20), or the defaults.
    private func applyPresenceLimits(to presence: ScopePresence) {
        presence.maxValueBytes = serverLimits?.maxPresenceBytes ?? 4_096
        presence.updatesPerSecond = serverLimits?.presenceUpdatesPerSecond ?? 10
    }
}
