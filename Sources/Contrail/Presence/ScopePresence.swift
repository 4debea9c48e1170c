/// Who else is in a scope, and what this replica shows them (Protocol §8.20): each session may
/// publish one small ephemeral JSON value per scope (a name, a colour, a cursor, a selection: the
/// app decides), and sees the other sessions' values as ``peers``, with ``PresenceEvent``s as they
/// join, change and leave.
///
/// Presence is never part of the model: it records no change set, never reaches a fragment log or
/// the server's scope log, and is not undone. It travels once the scope is fetched by a session
/// whose server offers it (a Contrail server; a Jetstream server never sees it). Changes go out at
/// most ``updatesPerSecond`` times a second, the latest value winning; the server does the same.
///
/// ```swift
/// try scope.presence.publish(["name": "Ada", "cursor": [120, 48]])
/// scope.presence.onChange(self) { event in print(event) }    // .joined, .changed, .left
/// for peer in scope.presence.peers { print(peer.user ?? peer.id, peer.value) }
/// ```
@MainActor
public final class ScopePresence {
    /// What this replica publishes; nil: nothing (it still sees the others once active).
    public private(set) var value: JSON?
    /// The other sessions with a value, by id. Empty while not connected. Reading it makes
    /// presence active (this replica asks the server for its peers).
    public var peers: [PresencePeer] {
        activate()
        return current
    }
    private var current: [PresencePeer] = []
    /// Whether this replica takes part: set by the first ``publish(_:)``, ``clear()``, read of
    /// ``peers``, ``onChange(_:_:)`` or ``events()``. Until then no presence goes over the wire for the scope.
    public private(set) var isActive = false
    /// The longest value the server relays, in bytes of JSON (the server's advertised limit; 4096
    /// until a server says otherwise).
    public package(set) var maxValueBytes = 4_096
    /// How often a change goes out at most (the server's advertised rate; 10 until one says otherwise).
    public package(set) var updatesPerSecond = 10

    private let observers = ObserverList<PresenceEvent>()
    /// The sync layer's hook: called when ``value`` changes or presence becomes active.
    let localChanges = ObserverList<Void>()

    init() {}

    /// Publishes `value` to the scope's other sessions (replacing this replica's earlier value).
    /// - Throws: ``PresenceError/valueTooLarge(bytes:limit:)`` when its JSON is longer than
    ///   ``maxValueBytes``; the earlier value stands. O(size of `value`).
    public func publish(_ value: JSON) throws(PresenceError) {
        let bytes = value.serialized().count
        guard bytes <= maxValueBytes else { throw .valueTooLarge(bytes: bytes, limit: maxValueBytes) }
        isActive = true
        guard value != self.value else { return }
        self.value = value
        localChanges.notify(())
    }

    /// Withdraws this replica's value: the other sessions see it leave (it keeps seeing them).
    public func clear() {
        let wasActive = isActive
        isActive = true
        guard value != nil || !wasActive else { return }
        value = nil
        localChanges.notify(())
    }

    /// Calls `body` with every peer that joins, changes or leaves, until `observer` is freed or
    /// the token cancelled. Makes presence active.
    @discardableResult
    public func onChange(_ observer: AnyObject, _ body: @escaping @MainActor (PresenceEvent) -> Void) -> ObservationToken {
        activate()
        return observers.add(observer, body)
    }

    /// The peers' changes as an `AsyncSequence`: a `.joined` for each current peer first, then
    /// every change. Buffering: the newest 256 unread events. Ends when the scope is freed or the
    /// consumer's task is cancelled. Makes presence active.
    public func events() -> AsyncStream<PresenceEvent> {
        activate()
        let stream = observers.stream(startingWith: nil, bufferingPolicy: .bufferingNewest(256))
        return AsyncStream(bufferingPolicy: .bufferingNewest(256)) { [current] continuation in
            for peer in current { continuation.yield(.joined(peer)) }
            let forward = Task {
                for await event in stream { continuation.yield(event) }
                continuation.finish()
            }
            continuation.onTermination = { _ in forward.cancel() }
        }
    }

    private func activate() {
        guard !isActive else { return }
        isActive = true
        localChanges.notify(())
    }

    // MARK: - From the sync layer

    /// Applies the server's `entries` (a value: joined or changed; nil: left). With `replace`, they
    /// are the whole set: every peer not among them leaves. O(peers + entries).
    func apply(_ entries: [(id: String, user: String?, value: JSON?)], replace: Bool) {
        var byID = Dictionary(uniqueKeysWithValues: current.map { ($0.id, $0) })
        var happened: [PresenceEvent] = []
        if replace {
            let named = Set(entries.map(\.id))
            for peer in current where !named.contains(peer.id) {
                byID[peer.id] = nil
                happened.append(.left(peer))
            }
        }
        for entry in entries {
            if let value = entry.value {
                let peer = PresencePeer(id: entry.id, user: entry.user, value: value)
                if let old = byID[entry.id] {
                    if old != peer { happened.append(.changed(peer)) }
                } else {
                    happened.append(.joined(peer))
                }
                byID[entry.id] = peer
            } else if let old = byID.removeValue(forKey: entry.id) {
                happened.append(.left(old))
            }
        }
        guard !happened.isEmpty else { return }
        current = byID.values.sorted { $0.id < $1.id }
        for event in happened { observers.notify(event) }
    }

    /// Every peer leaves (the connection is gone, or the scope was detached).
    func removeAllPeers() {
        apply([], replace: true)
    }
}
