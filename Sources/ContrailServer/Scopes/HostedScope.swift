import ContrailWire
import Foundation

/// A scope as the server's sessions, its inspector page and its stop see it. Two implementations,
/// chosen once when the server makes the scope (``ServerCore/scope(named:)``): ``LocalScope`` for a
/// server alone (state in memory, log in the data directory) and ``ClusterScope`` for a server in a
/// cluster (a replica of the scope's subject in the JetStream log). Both keep their state machine in
/// a ``ScopeCore``; no method asks which mode the server runs in.
///
/// Every implementation answers a session through its ``SessionOutbox``: a fetch queues
/// `ScopeFetchReply` then `ScopeState`, a sync queues its `ScopeSyncReply` after the change set is
/// applied (and durable), with the broadcasts to the other subscribed sessions queued in the scope's
/// one total order.
protocol HostedScope: Actor {
    /// The scope's name.
    nonisolated var name: String { get }

    /// Subscribes the session owning `outbox` (once, however often it fetches) as `scopeIndex` and
    /// queues `ScopeFetchReply` (answering `replyTo`) then `ScopeState` (or, for a client that asked
    /// for `chunks`, a large state as `ScopeStateChunk`s, §8.25), or a `ScopeFetchReply` with an
    /// error when the scope cannot be loaded or its state cannot go in one message.
    func fetch(outbox: SessionOutbox, scopeIndex: Int, replyTo: Int, chunks: Bool) async

    /// Applies one `ScopeSync` from the session owning `outbox`, acting as `identity` (the session
    /// checked its write access; procedures see it); queues its reply and the broadcasts.
    /// `received`: the fragments as the client sent them, when `message` holds dates converted to
    /// epoch seconds.
    func sync(_ message: ScopeSync, from outbox: SessionOutbox, identity: SessionIdentity, received: [SyncFragment]?) async

    /// Applies `syncs` (of this scope, from one session) in order, each as
    /// ``sync(_:from:identity:received:)``, in one turn of the scope: a session hands over a run of
    /// change sets with one hop to the scope's actor.
    func sync(_ syncs: [CheckedSync], from outbox: SessionOutbox, identity: SessionIdentity) async

    /// Removes a session's subscription (expiry).
    func unsubscribe(_ outbox: SessionOutbox) async

    /// Removes a session's subscription (`ScopeDetach`), then runs `done` once the broadcasts the
    /// scope already has on their way are in the session's outbox.
    func unsubscribe(_ outbox: SessionOutbox, then done: @escaping @Sendable () -> Void) async

    /// The state as `Scope.stateJSON()` shapes it; nil if it cannot be loaded.
    func stateJSON() async -> JSON?

    /// The number of subscribed sessions. For the inspector page.
    var subscriberCount: Int { get async }

    /// The number of objects (0 if the scope cannot be loaded). For the inspector page.
    var objectCount: Int { get async }

    /// The number of objects if the state is in memory now, nil otherwise (never loads). For the admin surface.
    var loadedObjectCount: Int? { get async }

    /// Replaces the scope's log with one snapshot record now (``ContrailServer/compactScope(_:)``).
    func compactNow() async throws(AdminError) -> CompactionReport

    /// Writes the scope's state into `directory` as a log of one snapshot record named like its
    /// log, as of one point in the scope's order after every change set acknowledged before the
    /// call, and only once everything before that point is durable (``ContrailServer/backup(to:)``).
    /// Nil for a scope that does not exist or has no log yet.
    func backup(into directory: URL) async throws(AdminError) -> BackupReport.Entry?

    /// The scope's history after `since` (§8.26): the change sets kept, the named revisions.
    func history(since: HistoryPoint?) async throws(AdminError) -> ScopeHistory

    /// The scope's state after `point`, rebuilt from its history, and the sequence number it stands for.
    func state(at point: HistoryPoint) async throws(AdminError) -> (sequence: Int, store: ScopeStore)

    /// Names the scope's current state `label`, marked by `user` (§8.26); durable when it returns.
    func markRevision(_ label: String, user: String) async throws(AdminError) -> ScopeRevision

    /// Writes out and closes whatever the scope holds; it loads and accepts nothing afterwards.
    func close() async
}

extension HostedScope {
    func sync(_ syncs: [CheckedSync], from outbox: SessionOutbox, identity: SessionIdentity) async {
        for sync in syncs { await self.sync(sync.message, from: outbox, identity: identity, received: sync.received) }
    }
}
