import ContrailSupport
import ContrailWire
import ContrailNATS
import Foundation

/// One scope of a cluster server: its order is the order of its subject in the JetStream log.
///
/// A `ScopeSync` is published as it came (with `Nats-Expected-Last-Subject-Sequence` set to the last
/// sequence this server applied, so it lands on exactly the state this server has, and a
/// `Nats-Msg-Id`); every server applies the subject's messages one by one in sequence order to its
/// in-memory replica, a ``ScopeStore`` with its ``ScopeCore`` (the apply is deterministic, so all
/// copies agree), which broadcasts to this server's sessions and, for a server's own message,
/// replies to its session — after JetStream acknowledged the publish (a server's own message the
/// stream stored right after what it applied is applied from the change sets it sent, not read back:
/// ``Appended/follows(_:)``). A publish
/// that lost the race (error 10071) catches up and is published again. Group commit: one publish is in flight per scope; the change sets that
/// arrive meanwhile go out together as the next message (``ClusterEntry/batch(_:)``). Every
/// `snapshotEvery` own change sets the state is written to the snapshot bucket and the log is
/// trimmed behind the snapshot before it.
///
/// Interest: the replica is loaded on the first fetch or sync, and unloaded (subscription ended,
/// state dropped) after `idleTimeout` with no subscribed session and nothing to publish.
///
/// Freshness: a core subscription on the subject wakes the replica when another server publishes
/// (the link's NATS connection has echo off: this server's own appends are applied from their
/// acknowledgement, and a wake-up naming a message already applied reads nothing). The
/// wake-up can come before the stream has stored the message (a replicated stream stores it once a
/// quorum has it) or for a publish it refuses, so the wake-up's message id is awaited: while one is
/// not applied, the replica reads again after 1 ms, doubling up to `wakeUpRetryLimit`, for up to
/// `requestTimeout` after the last wake-up naming it, or until a snapshot restored past the sequence
/// its publish expected last (`Contrail-Previous`) shows it trimmed. Behind that, while sessions are subscribed it
/// reads every `catchUpInterval` (a lost wake-up), and after each reconnection to NATS.
actor ClusterScope: HostedScope {
    /// The state built from the log.
    private struct Replica {
        /// The state after the subject's messages up to `applied`.
        var store: ScopeStore
        /// This server's sessions subscribed to it.
        var core: ScopeCore
        var applied: UInt64
    }

    /// Where the replica is.
    private enum Phase {
        /// Nothing loaded yet.
        case empty
        /// Applied the subject's messages up to `replica.applied`.
        case loaded(Replica)
        /// Closed by the server.
        case closed
    }

    /// The scope's name.
    nonisolated let name: String
    let link: ClusterLink
    let limits: ServerLimits
    private let clock: ElapsedClock
    private let log: ServerLog
    let subject: String
    let snapshotKey: String
    /// How long past snapshots and change sets stay readable (``ClusterHistory``); nil: what the
    /// stream holds after the latest snapshot.
    let historyRetention: Duration?
    /// The history's clock: each change set's `time`, each revision's, the retention's cutoff.
    let wallClock: @Sendable () -> Date
    private var phase: Phase = .empty
    /// The sessions waiting for their own change sets, by message id.
    private var origins: [String: [(outbox: SessionOutbox, message: ScopeSync)]] = [:]
    /// A change set waiting for the next publish (group commit).
    private struct Queued {
        let outbox: SessionOutbox
        let message: ScopeSync
        let payload: [UInt8]
    }
    /// Change sets waiting for the publish in flight to finish.
    private var queued: [Queued] = []
    /// The payload bytes in `queued`.
    private var queuedBytes = 0
    /// Sessions waiting for `queued` to shrink or a batch to be applied (they check again).
    private var queueWaiters: [CheckedContinuation<Void, Never>] = []
    /// Publishes `queued`, one batch at a time; nil when nothing is queued.
    private var committer: Task<Void, Never>?
    /// Change sets the committer has taken from `queued`, and those it is done with (applied or
    /// failed), since the replica was made: ``settledSequence()`` waits for what was queued before it.
    private var taken = 0
    private var committed = 0
    private var ownSinceSnapshot = 0
    private var snapshotDue = false
    private var lastSnapshot: UInt64 = 0
    private var passRunning = false
    private var passWaiters: [CheckedContinuation<Void, Never>] = []
    private var watcher: Task<Void, Never>?
    /// Retries a failed catch-up (JetStream unavailable for a while) until one succeeds.
    private var repair: Task<Void, Never>?
    /// A wake-up's message not applied yet: when the last wake-up naming it came, and the sequence
    /// its publish expected last on the subject (it is stored after that one, or not at all).
    private struct Awaited {
        var since: ElapsedClock.Instant
        var previous: UInt64
    }
    /// Message ids of wake-ups whose message is not applied yet (their publish may be in flight, or
    /// refused and never stored).
    private var awaited: [String: Awaited] = [:]
    /// Message ids applied lately (their wake-up may come after a catch-up applied them), oldest first.
    private var recentlyApplied = RecentIDs(limit: 4_096)
    /// Reads again, with backoff, while `awaited` is not empty.
    private var followUp: Task<Void, Never>?
    /// Reads every `catchUpInterval` while sessions are subscribed; unloads the replica once none
    /// has been for `idleTimeout`.
    private var ticker: Task<Void, Never>?
    /// How long the replica stays loaded with no subscribed session and nothing to publish.
    private let idleTimeout: Duration
    /// Since when the replica has had no subscribed session, nothing queued and nothing in flight.
    private var idleSince: ElapsedClock.Instant?
    /// The most message ids awaited at once (older ones are dropped; the periodic catch-up covers them).
    static let awaitedLimit = 4_096
    /// The first wait before reading again for an awaited message (doubling up to `wakeUpRetryLimit`).
    static let wakeUpRetryStart: Duration = .milliseconds(1)
    /// Set when the log holds a message in a format this server does not read: the scope stops here
    /// (no message is applied past it, every catch-up fails with it) until the replica is unloaded.
    private var stopped: ClusterLogFormat.UnknownFormat?
    /// Publish latency and apply lag are observed here (nil: nowhere).
    private let metrics: ServerMetrics?

    init(name: String, link: ClusterLink, limits: ServerLimits, clock: ElapsedClock, log: ServerLog,
         idleTimeout: Duration = .seconds(60), metrics: ServerMetrics? = nil, historyRetention: Duration? = nil,
         wallClock: @escaping @Sendable () -> Date = { Date() }) {
        self.metrics = metrics
        self.historyRetention = historyRetention
        self.wallClock = wallClock
        self.name = name
        self.idleTimeout = idleTimeout
        self.link = link
        self.limits = limits
        self.clock = clock
        self.log = log
        let token = ClusterEntry.token(for: name)
        subject = link.options.subjectPrefix + "." + token
        snapshotKey = token.isEmpty ? "empty" : token
    }

    // MARK: Serving sessions

    /// Catches up with the log, then subscribes the session and queues the reply and the state.
    func fetch(outbox: SessionOutbox, scopeIndex: Int, replyTo: Int, chunks: Bool) async {
        do throws(NATSError) {
            try await caughtUp()
            let deliver = try inReplica { $0.core.subscribe(outbox, scopeIndex: scopeIndex, replyTo: replyTo, store: $0.store, chunks: chunks) }
            deliver()
        } catch {
            log.write("cluster.unavailable", level: .error, scope: name, "scope '\(name)': cluster unavailable: \(error)")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo,
                error: WireErrorBody(message: "Scope could not be loaded: the cluster log is unavailable")))) }
        }
    }

    /// Queues the change set for the log and returns (the session goes on with its next message);
    /// the reply is queued when it is applied. Group commit: while a publish of this scope is in
    /// flight, change sets from any of this server's sessions wait, and go out together as one log
    /// message (up to `maxBatchBytes`), each applied on its own with its own reply and atomicity.
    /// A publish whose outcome is unknown (timed out, connection lost) is sent again with the same
    /// message id, so JetStream stores it once. The log holds the fragments with dates as epoch
    /// seconds, which is what every server's broadcasts carry (`received` is not used).
    /// Back-pressure: a session whose change set finds more than four batches' worth queued waits
    /// until the queue is below that (what one client can make the server hold stays bounded).
    /// `identity`'s user and the time go into the entry for the history (a cluster scope runs no procedures).
    func sync(_ message: ScopeSync, from outbox: SessionOutbox, identity: SessionIdentity, received: [SyncFragment]?) async {
        // Stopped on a log format it does not read: nothing more is appended through this server.
        guard stopped == nil else { return refuse([(outbox, message)], Self.stoppedReason(name)) }
        let entry = ClusterEntry.changeSet(fragments: message.fragments, atomic: message.atomic == true, id: message.changeSetID)
        let payload = ClusterEntry.stamped(entry.encoded, user: identity.user, time: wallClock())
        queued.append(Queued(outbox: outbox, message: message, payload: payload))
        queuedBytes += payload.count
        if committer == nil { committer = Task { await self.commit() } }
        while queuedBytes > 4 * link.options.maxBatchBytes, committer != nil {
            await withCheckedContinuation { queueWaiters.append($0) }
        }
    }

    /// Answers each change set with every fragment rejected for `reason` (it is not in the log).
    private func refuse(_ changeSets: [(outbox: SessionOutbox, message: ScopeSync)], _ reason: WireErrorBody) {
        for (outbox, message) in changeSets {
            let replies = Array(repeating: FragmentReply.rejected(reason), count: message.fragments.count)
            outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: message.index, fragmentReplies: replies))) }
        }
    }

    /// What the sessions of a scope stopped on an unknown log format are told (the format is the
    /// operator's business, in the log, not the client's).
    private static func stoppedReason(_ name: String) -> WireErrorBody {
        .couldNotApplySyncMessage("scope '\(name)' is unavailable on this server; start a new session")
    }

    /// Appends the queued change sets, a batch per publish, until none is left.
    private func commit() async {
        while !queued.isEmpty {
            // Batches are log format 2: one change set per message while a live server reads only 1.
            let writeFormat = await link.writeFormat
            var count = 0
            var bytes = 0
            while count < queued.count, count == 0 || (writeFormat >= 2 && bytes + queued[count].payload.count <= link.options.maxBatchBytes) {
                bytes += queued[count].payload.count + 1
                count += 1
            }
            let batch = Array(queued.prefix(count))
            queued.removeFirst(count)
            taken += count
            defer { committed += count }  // applied, or answered as failed
            queuedBytes -= batch.reduce(0) { $0 + $1.payload.count }
            let waiters = queueWaiters
            queueWaiters = []
            for waiter in waiters { waiter.resume() }
            let id = UUID().uuidString
            origins[id] = batch.map { ($0.outbox, $0.message) }
            let stored: Appended
            let payload = ClusterEntry.batchPayload(batch.map(\.payload))
            let format = count > 1 ? 2 : 1
            do throws(NATSError) {
                stored = try await append(payload, id: id, format: format)
            } catch {
                guard let origins = origins.removeValue(forKey: id) else { continue }
                log.write("cluster.append_failed", level: .error, scope: name, "scope '\(name)': \(origins.count) change set(s) not appended: \(error)")
                refuse(origins, .couldNotApplySyncMessage("the cluster log is unavailable"))
                continue
            }
            ownSinceSnapshot += batch.count
            if ownSinceSnapshot >= link.options.snapshotEvery {
                ownSinceSnapshot = 0
                snapshotDue = true
            }
            // Stored right after what this server applied (no other server's message between): apply
            // the change sets just published, without reading them back (a NATS round trip, a JSON
            // response and base64 less per batch) or decoding the payload made from them: decoding a
            // log entry gives back the entries it was encoded from (`ClusterEntryRoundTripTests`),
            // so this is what every other server applies from the log.
            let sequence = stored.sequence
            if stored.follows(applied), !passRunning, origins[id] != nil {
                apply(batch.map { ClusterEntry.changeSet(fragments: $0.message.fragments, atomic: $0.message.atomic == true,
                                                         id: $0.message.changeSetID) },
                      sequence: sequence, id: id)
            }
            // Stored: the replies go out when it is applied, by this catch-up or a later one (the
            // pass also writes a snapshot when one is due).
            do throws(NATSError) {
                if snapshotDue, applied >= sequence { try await catchUp() } else { try await catchUp(through: sequence) }
            } catch {
                catchUpFailed(error)
            }
            let applied = queueWaiters
            queueWaiters = []
            for waiter in applied { waiter.resume() }
        }
        committer = nil
        let waiters = queueWaiters
        queueWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Where an append was stored: its stream sequence, the subject sequence its publish expected
    /// last, whether JetStream had stored it before (a retry's duplicate), and whether the stream
    /// checks that expectation as it stores (``ClusterLink/Handles/checksExpectationOnStore``).
    struct Appended: Equatable {
        var sequence: UInt64
        var previous: UInt64
        var duplicate: Bool
        var checked: Bool

        /// Whether the message is known to be the subject's next after `applied`, so the server may
        /// apply it without reading it back. The stream sequence counts every scope's messages, so
        /// `applied + 1` (nothing at all stored between) is rare while other scopes write; a stream
        /// that checks the expectation on store put a first store expecting `applied` right after
        /// it on the subject. Otherwise (a replicated stream, a NATS cluster, a duplicate stored
        /// on an earlier expectation) it is read back. O(1).
        func follows(_ applied: UInt64) -> Bool {
            guard previous == applied, sequence > applied else { return false }
            return sequence == applied + 1 || (checked && !duplicate)
        }
    }

    /// Publishes `entry` on the state this server has applied; after losing the race to another
    /// server (10071) catches up and tries again. Returns where it was stored.
    private func append(_ payload: [UInt8], id: String, format: Int) async throws(NATSError) -> Appended {
        try await loaded()
        let handles = try await link.handles()
        var failures = 0
        for _ in 0..<1_000 {
            // A catch-up applied it (an earlier try was stored).
            if origins[id] == nil { return Appended(sequence: applied, previous: applied, duplicate: true, checked: false) }
            let previous = applied
            do throws(NATSError) {
                let started = ServerMetrics.now()
                defer { if let metrics { ServerMetrics.observe(metrics.natsPublish, since: started) } }
                var headers = [(ClusterEntry.previousHeader, String(previous))]
                if format > 1 { headers.append((ClusterLogFormat.header, String(format))) }
                let ack = try await handles.jetStream.publish(subject, payload: payload, headers: NATSHeaders(headers),
                    messageID: id, expectedLastSubjectSequence: previous)
                return Appended(sequence: ack.seq, previous: previous, duplicate: ack.duplicate, checked: handles.checksExpectationOnStore)
            } catch .jetStream(let error) where error.errorCode == JetStreamAPIError.wrongLastSequence {
                try await catchUp()  // another server appended first: apply its messages, try again
            } catch .timedOut, .disconnected {
                failures += 1
                if failures >= 5 { throw .timedOut("appending to the log of scope '\(name)'") }
            }
        }
        throw .timedOut("appending to the log of scope '\(name)': lost the race to other servers 1000 times")
    }

    /// Removes a session's subscription.
    func unsubscribe(_ outbox: SessionOutbox) async {
        _ = try? inReplica { $0.core.unsubscribe(outbox) }
    }

    /// Removes a session's subscription, then runs `done` once this session's change sets queued
    /// or in flight (group commit) have their replies in its outbox, or the publishing stopped:
    /// nothing of this scope follows what `done` queues.
    func unsubscribe(_ outbox: SessionOutbox, then done: @escaping @Sendable () -> Void) async {
        await unsubscribe(outbox)
        while committer != nil,
              queued.contains(where: { $0.outbox === outbox })
                || origins.values.contains(where: { $0.contains { $0.outbox === outbox } }) {
            await withCheckedContinuation { queueWaiters.append($0) }
        }
        done()
    }

    /// The state as `Scope.stateJSON()` shapes it, after catching up; nil if the log is unavailable.
    func stateJSON() async -> JSON? {
        guard (try? await caughtUp()) != nil, case .loaded(let replica) = phase else { return nil }
        return replica.store.stateJSON()
    }

    /// The sequence number of the last change set (the history's numbering) once this server's
    /// change sets queued or in flight are applied and the log is caught up (``markRevision(_:user:)``).
    func settledSequence() async throws(NATSError) -> Int {
        let target = taken + queued.count  // what is queued or in flight now, not what comes later
        while committer != nil, committed < target { await withCheckedContinuation { queueWaiters.append($0) } }
        try await caughtUp()
        return try inReplica { $0.store.sequence }
    }

    /// The number of this server's sessions subscribed.
    var subscriberCount: Int {
        if case .loaded(let replica) = phase { replica.core.subscriberCount } else { 0 }
    }

    /// The number of objects in the replica as applied so far (0 before it is loaded; the
    /// inspector does not make it catch up).
    var objectCount: Int {
        if case .loaded(let replica) = phase { replica.store.objectCount } else { 0 }
    }

    /// Every message the log held when called is applied.
    private func caughtUp() async throws(NATSError) {
        try await loaded()
        try await catchUp()
        guard case .loaded = phase else { throw .closed }
    }

    /// Runs `body` on the loaded replica, in place: the store stays uniquely referenced while it
    /// changes (no copy of the state per change set). Throws `closed` when no replica is loaded.
    private func inReplica<Value>(_ body: (inout Replica) -> Value) throws(NATSError) -> Value {
        guard case .loaded(var replica) = phase else { throw .closed }
        phase = .empty
        defer { phase = .loaded(replica) }
        return body(&replica)
    }

    /// Stops following the log.
    func close() async {
        watcher?.cancel()
        repair?.cancel()
        followUp?.cancel()
        ticker?.cancel()
        phase = .closed
    }

    // MARK: Following the log

    private var applied: UInt64 {
        if case .loaded(let replica) = phase { replica.applied } else { 0 }
    }

    /// Loads the replica on first use: the latest snapshot and the log after it; writes the genesis
    /// if the scope is new.
    private func loaded() async throws(NATSError) {
        switch phase {
        case .loaded: return
        case .closed: throw .closed
        case .empty: break
        }
        let handles = try await link.handles()
        if case .empty = phase, let snapshot = try await handles.snapshots.get(snapshotKey) {
            try restore(snapshot.value)
        }
        try await catchUp()
        if case .empty = phase {
            do throws(NATSError) {
                _ = try await handles.jetStream.publish(subject, payload: ClusterEntry.genesis(root: UUID()).encoded,
                    headers: NATSHeaders([(ClusterEntry.previousHeader, "0")]),
                    messageID: "genesis." + snapshotKey, expectedLastSubjectSequence: 0)
            } catch .jetStream(let error) where error.errorCode == JetStreamAPIError.wrongLastSequence {
                // Another server wrote the genesis first: replay it.
            }
            try await catchUp()
        }
        if watcher == nil { watcher = Task { [weak self] in await self?.watch(handles.jetStream.connection) } }
        if ticker == nil {
            let clock = clock
            let interval = link.options.catchUpInterval
            ticker = Task { [weak self] in
                while (try? await clock.sleep(for: interval)) != nil {
                    guard let self, await self.tick() else { return }
                }
            }
        }
        switch phase {
        case .loaded: return
        case .closed: throw .closed
        case .empty: throw .invalidResponse("the log of scope '\(name)' has no genesis")
        }
    }

    /// Catches up whenever anything is published on the subject (by any server), and after each
    /// reconnection to NATS (what was published meanwhile sent no notification here).
    private func watch(_ connection: NATSConnection) async {
        guard let subscription = try? await connection.subscribe(subject) else { return }
        let reconnections = await connection.reconnections()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in subscription.messages {
                    await self.notified(awaiting: message.headers?[NATSHeaders.messageID],
                                        previous: message.headers?[ClusterEntry.previousHeader].flatMap(UInt64.init) ?? 0)
                }
            }
            group.addTask { for await _ in reconnections { await self.notified(awaiting: nil) } }
        }
        await subscription.unsubscribe()
    }

    /// A wake-up: reads what is stored; if the message `id` names is not among it yet, keeps
    /// reading with backoff until it is (or until `requestTimeout` passed without a new wake-up for
    /// it, or a snapshot restored past `previous` covers it). `previous` is the sequence its
    /// publish expected last (its `Contrail-Previous` header).
    func notified(awaiting id: String?, previous: UInt64 = 0) async {
        guard case .loaded = phase else { return }  // unloaded: the next use reads from the snapshot
        // Applied already (by a catch-up a wake-up before it started), so is everything before it.
        if let id, recentlyApplied.contains(id) { return }
        // With `previous` behind the last snapshot, its message is in that snapshot or was refused.
        if let id, !recentlyApplied.contains(id), previous >= lastSnapshot {
            if awaited.count >= Self.awaitedLimit, let oldest = awaited.min(by: { $0.value.since < $1.value.since })?.key {
                awaited[oldest] = nil
            }
            awaited[id] = Awaited(since: clock.now, previous: previous)
        }
        do throws(NATSError) { try await catchUp() } catch { catchUpFailed(error) }
        followUpIfAwaiting()
    }

    /// Starts the backoff reads unless nothing is awaited or they run already.
    private func followUpIfAwaiting() {
        guard !awaited.isEmpty, followUp == nil else { return }
        let clock = clock
        let limit = link.options.wakeUpRetryLimit
        followUp = Task { [weak self] in
            var delay = Self.wakeUpRetryStart
            while (try? await clock.sleep(for: delay)) != nil {
                guard let self, await self.readAwaited() else { return }
                delay = min(delay * 2, limit)
            }
        }
    }

    /// One backoff read for the awaited messages; true to read again later.
    private func readAwaited() async -> Bool {
        let patience = link.options.requestTimeout
        let now = clock.now
        awaited = awaited.filter { now - $0.value.since < patience }
        if case .loaded = phase, !awaited.isEmpty {
            do throws(NATSError) { try await catchUp() } catch { catchUpFailed(error) }
        }
        if case .loaded = phase, !awaited.isEmpty { return true }
        followUp = nil
        return false
    }

    /// The periodic catch-up (a wake-up NATS lost, one dropped from a full buffer) while sessions
    /// are subscribed; with none for `idleTimeout`, unloads the replica. False to stop ticking.
    private func tick() async -> Bool {
        switch phase {
        case .closed, .empty:
            ticker = nil
            return false
        case .loaded(let replica):
            guard replica.core.subscriberCount == 0 else {
                idleSince = nil
                do throws(NATSError) { try await catchUp() } catch { catchUpFailed(error) }
                return true
            }
        }
        guard queued.isEmpty, committer == nil, origins.isEmpty, !passRunning else {
            idleSince = nil
            return true
        }
        let now = clock.now
        guard let since = idleSince else {
            idleSince = now
            return true
        }
        guard now - since >= idleTimeout else { return true }
        unload()
        return false
    }

    /// Interest: a scope none of this server's sessions has subscribed to for `idleTimeout` stops
    /// following the log (its wake-up subscription ends) and leaves memory; the next fetch or sync
    /// loads it again from the snapshot and the log. A server pays nothing for scopes served elsewhere.
    private func unload() {
        watcher?.cancel()
        followUp?.cancel()
        repair?.cancel()
        watcher = nil
        followUp = nil
        repair = nil
        ticker = nil
        awaited = [:]
        recentlyApplied = RecentIDs(limit: 4_096)
        idleSince = nil
        stopped = nil
        phase = .empty
        log.write("scope.unloaded", scope: name, "scope '\(name)': unloaded (no session for \(idleTimeout))")
    }

    /// How many wake-ups' messages are awaited (read again with backoff). For tests.
    var awaitedCount: Int { awaited.count }

    /// Whether the replica is in memory and following the log. For tests and the inspector.
    var isLoaded: Bool {
        if case .loaded = phase { true } else { false }
    }

    /// Logs the failure and keeps trying (100 ms, doubling up to 5 s) until a catch-up succeeds, so
    /// a replica left behind while JetStream was unavailable does not wait for the next message.
    private func catchUpFailed(_ error: NATSError) {
        guard stopped == nil else { return }  // said once, when it stopped; retrying cannot help
        log.write("cluster.catch_up_failed", level: .warning, scope: name, "scope '\(name)': catching up: \(error)")
        guard repair == nil else { return }
        let clock = clock
        repair = Task { [weak self] in
            var delay = Duration.milliseconds(100)
            while !Task.isCancelled {
                try? await clock.sleep(for: delay)
                guard let self, await self.retryCatchUp() else { return }
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// One repair attempt; true to try again.
    private func retryCatchUp() async -> Bool {
        guard case .loaded = phase else {
            repair = nil
            return false
        }
        do throws(NATSError) {
            try await catchUp()
            repair = nil
            return false
        } catch {
            return true
        }
    }

    /// Applies the subject's messages after `applied`, until there are none (or, with `target`,
    /// until that sequence is applied). One pass runs at a time, so messages are applied in order.
    private func catchUp(through target: UInt64? = nil) async throws(NATSError) {
        var passes = 0
        while true {
            if let target, applied >= target { return }
            if passRunning {
                await withCheckedContinuation { passWaiters.append($0) }
                continue  // that pass may have started before the caller's message was stored
            }
            passRunning = true
            defer {
                passRunning = false
                let waiters = passWaiters
                passWaiters = []
                for waiter in waiters { waiter.resume() }
            }
            try await runPass()
            if target == nil { return }
            passes += 1
            if passes >= 100 { throw .timedOut("catching up with the log of scope '\(name)'") }
        }
    }

    private func runPass() async throws(NATSError) {
        if let stopped { throw .invalidResponse(stopped.description) }
        let handles = try await link.handles()
        let stream = link.options.streamName
        while let message = try await handles.jetStream.nextMessage(stream: stream, subject: subject, from: applied + 1) {
            if case .closed = phase { return }
            let format = ClusterLogFormat.format(of: message)
            guard ClusterLogFormat.readable(format, by: link.options.logFormat) else {
                // Never skipped: this replica would differ from the others from here on.
                let unknown = ClusterLogFormat.UnknownFormat(scope: name, sequence: message.sequence, format: String(format.prefix(20)),
                                                             reads: link.options.logFormat)
                stopped = unknown
                log.write("cluster.unknown_log_format", level: .error, scope: name, "scope '\(name)' stopped on this server: \(unknown)")
                // Its sessions can no longer be kept current: they end, and their clients start over
                // (on this server a fetch now fails with a reason; a server that reads the format
                // serves them, and answers a change set they send again as a repeat).
                if case .loaded(let replica) = phase { replica.core.endSubscribers(Self.stoppedReason(name)) }
                throw .invalidResponse(unknown.description)
            }
            let previous = message.headers?[ClusterEntry.previousHeader].flatMap(UInt64.init) ?? 0
            if previous > applied {
                // Its publisher had applied messages this server never saw: they were trimmed behind
                // a snapshot, so start from that. (A `previous` below `applied` is a message that got
                // in beside another on the same expected sequence — nats-server 2.9 does not enforce
                // the expectation across in-flight publishes of a replicated stream — and is applied
                // in log order like any other: the order, not the expectation, keeps servers equal.)
                guard let snapshot = try await handles.snapshots.get(snapshotKey) else {
                    throw .invalidResponse("the log of scope '\(name)' misses messages before \(message.sequence) and has no snapshot")
                }
                let restoredAt = try restore(snapshot.value)
                guard restoredAt >= previous else {
                    throw .invalidResponse("the log of scope '\(name)' misses messages before \(message.sequence)")
                }
                continue
            }
            apply(message)
        }
        if snapshotDue {
            snapshotDue = false
            await snapshot(handles)
        }
    }

    /// Applies one message to the replica: broadcasts to this server's sessions, and replies to the
    /// session that sent it if it is this server's.
    private func apply(_ message: StoredMessage) {
        let entry: ClusterEntry
        do throws(NATSError) { entry = try ClusterEntry(decoding: message.payload) } catch {
            // Every server skips the same unreadable message.
            log.write("cluster.message_skipped", level: .error, scope: name, "scope '\(name)': log message \(message.sequence) skipped: \(error)")
            _ = try? inReplica { $0.applied = message.sequence }
            return
        }
        switch (entry, phase) {
        case (.genesis(let root), .empty):
            phase = .loaded(makeReplica(ScopeStore(rootUUID: root), applied: message.sequence))
            if let id = message.headers?[NATSHeaders.messageID] { applied(id: id) }
        case (.changeSet, .loaded), (.batch, .loaded):
            let members = if case .batch(let members) = entry { members } else { [entry] }
            apply(members, sequence: message.sequence, id: message.headers?[NATSHeaders.messageID])
        case (_, .loaded):
            _ = try? inReplica { $0.applied = message.sequence }
        default:
            log.write("cluster.message_skipped", level: .warning, scope: name, "scope '\(name)': log message \(message.sequence) before the genesis skipped")
        }
    }

    /// Applies the change sets of the log message at `sequence` (its id `id`) to the loaded
    /// replica, in order: broadcasts each to this server's sessions, and replies to the session
    /// that sent it if it is this server's. O(fragments).
    private func apply(_ members: [ClusterEntry], sequence: UInt64, id: String?) {
        if let id { applied(id: id) }
        let senders = id.flatMap { origins.removeValue(forKey: $0) } ?? []
        for (index, member) in members.enumerated() {
            guard case .changeSet(let fragments, let atomic, let changeSetID) = member else { continue }
            let origin = index < senders.count ? senders[index] : nil
            let sync = ScopeSync(index: origin?.message.index ?? 0, scopeIndex: origin?.message.scopeIndex ?? 0,
                                 fragments: fragments, atomic: atomic, changeSetID: changeSetID)
            let changeSet = try? inReplica { replica in
                replica.applied = sequence
                let outcome = replica.core.apply(sync, to: &replica.store, from: origin?.outbox)
                if case .accepted = outcome { _ = replica.store.advanceSequence() }  // the history's numbering
                return outcome
            }
            switch changeSet {
            case .refused(let deliver)?, .unchanged(let deliver)?, .accepted(_, let deliver)?: deliver()
            case nil: break
            }
        }
        // Also past a batch with no member (hostile or empty): it is read once, not forever.
        _ = try? inReplica { $0.applied = sequence }
    }

    /// Notes that the message with this id is applied: no wake-up waits for it any more.
    private func applied(id: String) {
        if let awaiting = awaited.removeValue(forKey: id) { metrics?.natsApplyLag.observe(clock.now - awaiting.since) }
        recentlyApplied.insert(id)
    }

    /// A replica of `store` at `applied`, with no subscriber yet. Cluster scopes run no procedures
    /// (the log holds no procedure name).
    private func makeReplica(_ store: ScopeStore, applied: UInt64) -> Replica {
        Replica(store: store, core: ScopeCore(name: name, limits: limits, procedures: [], metrics: metrics), applied: applied)
    }

    /// Replaces the local state with a snapshot (`{"seq": n, "state": …}`) newer than what is
    /// applied; returns the snapshot's sequence.
    @discardableResult
    private func restore(_ bytes: [UInt8]) throws(NATSError) -> UInt64 {
        guard let json = try? JSON(parsing: bytes), let seq = json["seq"]?.uint64Value,
              let state = json["state"], let store = ScopeStore(snapshot: state) else {
            throw .invalidResponse("the snapshot of scope '\(name)' is malformed")
        }
        switch phase {
        case .empty:
            phase = .loaded(makeReplica(store, applied: seq))
        case .loaded(var replica) where seq > replica.applied:
            // The subscribed sessions stay, and get what the trimmed messages changed as one broadcast.
            log.write("cluster.snapshot_restored", level: .warning, scope: name, "scope '\(name)': behind the trimmed log; restored the snapshot at \(seq)")
            let missed = store.fragments(changedSince: replica.store)
            let deliver = replica.core.broadcast(missed)
            replica.store = store
            replica.applied = seq
            phase = .loaded(replica)
            deliver()
        default:
            break
        }
        lastSnapshot = max(lastSnapshot, seq)
        // A message awaited after `previous` < seq is in the snapshot (trimmed from the log: its id
        // will never be read) or was refused at that expectation (a retry wakes again): no waiting.
        awaited = awaited.filter { $0.value.previous >= seq }
        return seq
    }

    /// Writes the state at `applied` to the snapshot bucket (unless a newer one is there) and trims
    /// the log behind the previous snapshot, so a server slightly behind still finds its next message.
    /// Runs inside a catch-up pass, so no message is applied between reading the state and its sequence.
    private func snapshot(_ handles: ClusterLink.Handles) async {
        // (Read in a function of its own, so no copy of the replica outlives it across the awaits.)
        guard let record = appliedState() else { return }
        let (seq, state) = record
        do throws(NATSError) {
            let current = try await handles.snapshots.get(snapshotKey)
            let currentSeq = current.flatMap { try? JSON(parsing: $0.value) }?["seq"]?.uint64Value ?? 0
            guard currentSeq < seq else { return }
            let record = JSON.object(["seq": .int(Int64(seq)), "state": state]).serialized()
            _ = try await handles.snapshots.update(snapshotKey, record, revision: current?.revision ?? 0)
            // With a history retention, the trim keeps what the history needs (``ClusterHistory``).
            var trimBefore = currentSeq
            if let historyRetention {
                trimBefore = try await ClusterHistory.keep(state, at: seq, previous: currentSeq, of: snapshotKey, handles,
                                                           retention: historyRetention, now: wallClock())
            }
            if trimBefore > 0 {
                _ = try await handles.jetStream.purge(stream: link.options.streamName, subject: subject, before: trimBefore)
            }
            lastSnapshot = seq
        } catch {
            log.write("cluster.snapshot_failed", level: .error, scope: name, "scope '\(name)': snapshot at \(seq) not written: \(error)")
        }
    }

    /// The sequence applied and the snapshot record of the state at it.
    private func appliedState() -> (UInt64, JSON)? {
        guard case .loaded(let replica) = phase else { return nil }
        return (replica.applied, replica.store.snapshotJSON(name: name))
    }
}
