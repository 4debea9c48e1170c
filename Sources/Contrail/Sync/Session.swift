import ContrailSupport
import Foundation

/// A session with a sync server: fetch scopes into it, and their changes flow both ways.
///
/// A session outlives reconnects (the server keeps it by token). When the server forgets it (a
/// fatal close, or replies that never come) the client opens a new one behind the same `Session`:
/// every scope is fetched again and pending change sets are sent again, so nothing is lost.
///
/// ```swift
/// let session = try await client.connect()
/// try await session.fetch(scope)              // realtime from here on
/// session.setMode(.manual, for: scope)
/// try await session.sync(scope)                // send and receive now
/// ```
@MainActor
public final class Session {
    private weak var client: Client?
    /// The server's token for this session (a bearer secret: never log it).
    var token: String
    private var nextIndex = 1
    private var lastServerIndex = 0
    /// Sequenced messages the server has not acknowledged, in index order.
    private var resendBuffer: [Message] = []
    /// The index of each message of `resendBuffer`, at the same position (found without reading a
    /// `Message`: a change set's reply scans a thousand of them).
    private var resendIndices: [Int] = []
    /// Reply handlers by request index.
    private var awaiting: [Int: (Message) -> Void] = [:]
    /// When each awaited request was (re)sent, and the keep-alive ticks since: a reply is overdue
    /// only after enough ticks as well as enough time, so a main actor that was busy for a while
    /// (one late tick) does not count as a silent server.
    private var sentAt: [Int: (time: Duration, ticks: Int)] = [:]
    /// How often each request's reply timed out.
    private var strikes: [Int: Int] = [:]
    private(set) var connection: Connection?
    /// After a resume, new messages wait until the server's resend frame (§8.5).
    private(set) var isHolding = false
    private(set) var subscriptions: [ScopeSubscription] = []
    private(set) var byScopeIndex: [Int: ScopeSubscription] = [:]
    private var paused: [Message]?
    /// How many `pauseIncoming()` calls wait for their `resumeIncoming()`.
    private var pauseDepth = 0
    /// Whether the client ended this session (`Client.close()`): every call fails at once.
    private(set) var isClosed = false
    /// `sync(_:)` and `detach(_:)` calls waiting for the server; they fail when the session closes.
    private var syncWaiters: [ReplyWaiter<Void>] = []
    private var inFlight = 0
    private let syncStatusObservers = ObserverList<SyncStatus>()
    private var lastSyncStatus = SyncStatus.synced
    /// The Contrail extensions the server listed in its `SessionCreateReply` (none for Jetstream).
    private(set) var serverExtensions: Set<String> = []
    /// The message limits the server advertised (Protocol §8.19): a change set over them is refused
    /// here, before it is sent. Nil for a Jetstream server.
    private(set) var serverLimits: SessionLimits?

    /// The client's clock (`ClientOptions.clock`): reply deadlines and the waits of `fetch`,
    /// `sync` and `detach` run on it.
    let timeline: ElapsedClock

    init(client: Client, token: String) {
        self.client = client
        self.token = token
        timeline = client.timeline
    }

    var options: ClientOptions { client?.options ?? ClientOptions() }

    // MARK: - Public API

    /// Fetches `scope` (by its name) from the server and keeps it in sync from then on. The scope
    /// needs a root object; it takes over the server's root UUID, objects the server does not have
    /// are detached, and properties the state leaves out get their defaults (Protocol §3.4).
    /// Fetching a scope again refreshes it. A refused fetch throws `SyncError.fetchFailed`; a state
    /// too large for one message from a server that cannot send it in parts, with the error type
    /// `state-too-large` (fetching again cannot help, and the session does not retry it).
    ///
    /// A large state comes in parts from a Contrail server (Protocol §8.25): `progress` is called
    /// with the objects received of the total as each part arrives (once, whole, for a state in
    /// one message), and the scope changes only when the last part is in, all at once: the app
    /// never sees half a state. Change sets others make meanwhile follow the state. The wait
    /// (`connectTimeout`) starts over with every part.
    public func fetch(_ scope: Scope, params: [String: JSON] = [:], mode: SyncMode = .realtime,
                      progress: (@MainActor (FetchProgress) -> Void)? = nil) async throws(SyncError) {
        guard client != nil, !isClosed else { throw .closed }
        guard scope.root != nil else { throw .scopeHasNoRoot(scope.name) }
        let subscription: ScopeSubscription
        if let existing = subscriptions.first(where: { $0.scope === scope }) {
            subscription = existing
            subscription.mode = mode
        } else {
            scope.flush()
            scope.isSynced = true
            scope.syncOwner = self
            subscription = ScopeSubscription(scope: scope, params: params, mode: mode)
            subscriptions.append(subscription)
            subscription.listen { [weak self, weak subscription] changeSet in
                guard let self, let subscription else { return }
                self.enqueue(changeSet, in: subscription)
            }
            listenToPresence(subscription)
            // Change sets a fragment log restored unacknowledged go out first, once the scope is fetched.
            for changeSet in scope.restoredPending { _ = subscription.queue.append(changeSet) }
            scope.restoredPending.removeAll()
        }
        if let progress { subscription.progress = progress }
        requestFetch(subscription)
        var parts = subscription.partsReceived
        while true {
            let result = await subscription.attached.wait(timeout: options.connectTimeout, clock: timeline.clock)
            if case .failure(.timedOut) = result, subscription.partsReceived != parts, !isClosed {
                parts = subscription.partsReceived   // parts keep coming: wait on
                continue
            }
            if case .failure(let error) = result {
                if !subscription.isAttached { remove(subscription) }
                throw error
            }
            return
        }
    }

    /// Changes how `scope` syncs. Going back to a mode that applies remote changes fetches the
    /// scope again if remote changes were skipped meanwhile.
    public func setMode(_ mode: SyncMode, for scope: Scope) {
        guard let subscription = subscription(for: scope) else { return }
        subscription.mode = mode
        if mode.applies, subscription.missedRemote { requestFetch(subscription) }
        pump()
    }

    /// The sync mode of `scope`, if it was fetched.
    public func mode(of scope: Scope) -> SyncMode? { subscription(for: scope)?.mode }

    /// Syncs `scope` now (for `manual` and the other non-realtime modes): catches up with remote
    /// changes, sends the local change sets that wait, and returns once the server has settled them.
    /// Throws `SyncError.notFetched` for a scope this session does not hold, `.closed` when the
    /// session is or becomes closed, `.timedOut` after `timeout` (default `connectTimeout`), and
    /// `.cancelled` when the calling task is cancelled.
    public func sync(_ scope: Scope, timeout: Duration? = nil) async throws(SyncError) {
        guard !isClosed else { throw .closed }
        guard let subscription = subscription(for: scope) else { throw .notFetched(scope.name) }
        let deadline = timeline.elapsed + (timeout ?? options.connectTimeout)
        scope.flush()
        if subscription.missedRemote || !subscription.isAttached {
            requestFetch(subscription)
            try await subscription.attached.wait(timeout: deadline - timeline.elapsed, clock: timeline.clock).get()
        }
        let waiting = subscription.queue.entries.map(\.changeSet).filter { !$0.isSettled }
        pump(forcing: subscription)
        try await settled(waiting, deadline: deadline)
    }

    /// Stops syncing `scope` (Yorkie's `detach`): its waiting local change sets are sent first
    /// and awaited until `timeout` (default `connectTimeout`); those still unsettled then are
    /// returned (they stay `syncing` and are never resent). From then on local edits stay local and
    /// remote changes are ignored; fetch the scope again to resume.
    ///
    /// A Contrail server is told with a `ScopeDetach` (a Contrail extension it advertises in its
    /// `SessionCreateReply`): it drops the subscription, and `detach` waits for its answer within the
    /// same `timeout` (a late answer is still taken; offline, the message goes out on reconnect). A
    /// Jetstream server is not told (its protocol has no unsubscribe, Protocol §6.16): it keeps
    /// sending the scope until the session ends, and this session ignores it.
    /// Throws `SyncError.notFetched` for a scope this session does not hold.
    @discardableResult
    public func detach(_ scope: Scope, timeout: Duration? = nil) async throws(SyncError) -> [ChangeSet] {
        guard let subscription = subscription(for: scope) else { throw .notFetched(scope.name) }
        let deadline = timeline.elapsed + (timeout ?? options.connectTimeout)
        scope.flush()
        let waiting = subscription.queue.entries.map(\.changeSet)
        if !isClosed && subscription.isFetching {
            // Learn the scope index the server is about to hand out, so that it can be detached too.
            _ = await subscription.attached.wait(timeout: deadline - timeline.elapsed, clock: timeline.clock)
        }
        if !isClosed && subscription.isAttached {
            pump(forcing: subscription)
            try? await settled(waiting, deadline: deadline)
        }
        guard self.subscription(for: scope) === subscription else { return waiting.filter { !$0.isSettled } }
        remove(subscription)
        subscription.attached.resolve(.failure(.notFetched(scope.name)))
        scope.isSynced = false
        reportSyncStatus()
        if let scopeIndex = subscription.scopeIndex, !isClosed, serverExtensions.contains(ScopeDetach.typeName) {
            let answered = ReplyWaiter<Void>()
            syncWaiters.append(answered)   // a close ends the wait too
            defer { syncWaiters.removeAll { $0 === answered } }
            _ = request({ .scopeDetach(ScopeDetach(index: $0, scopeIndex: scopeIndex)) }) { _ in answered.resolve(.success(())) }
            _ = await answered.wait(timeout: max(.zero, deadline - timeline.elapsed), clock: timeline.clock)
        }
        return waiting.filter { !$0.isSettled }
    }

    /// Names `scope`'s state on the server `label` (a named revision, Protocol §8.26), once every
    /// local change made before the call is synced (``sync(_:timeout:)``); returns the sequence
    /// number of the scope's last change set the revision includes. Waits until `timeout`
    /// (default `connectTimeout`). `contrail scope at`/`restore` take the label.
    /// Throws `SyncError.extensionUnavailable` when the server does not offer `MarkRevision` (an
    /// original Jetstream server, or one without history), `.revisionRefused` when it refuses
    /// the label, `.notFetched` for a scope this session does not hold.
    public func markRevision(_ label: String, in scope: Scope, timeout: Duration? = nil) async throws(SyncError) -> Int {
        guard subscription(for: scope) != nil else { throw .notFetched(scope.name) }
        guard serverExtensions.contains(MarkRevision.typeName) else { throw .extensionUnavailable(MarkRevision.typeName) }
        let deadline = timeline.elapsed + (timeout ?? options.connectTimeout)
        try await sync(scope, timeout: timeout)
        guard let scopeIndex = subscription(for: scope)?.scopeIndex else { throw .notFetched(scope.name) }
        let answered = ReplyWaiter<Void>()
        syncWaiters.append(answered)   // a close ends the wait too
        defer { syncWaiters.removeAll { $0 === answered } }
        var outcome: Result<Int, SyncError> = .failure(.closed)
        _ = request({ .markRevision(MarkRevision(index: $0, scopeIndex: scopeIndex, label: label)) }) { reply in
            guard case .markRevisionReply(let answer) = reply else { return }
            outcome = answer.error.map { .failure(.revisionRefused($0)) } ?? .success(answer.sequence ?? 0)
            answered.resolve(.success(()))
        }
        try await answered.wait(timeout: max(.zero, deadline - timeline.elapsed), clock: timeline.clock).get()
        return try outcome.get()
    }

    /// Waits until every change set in `changeSets` is settled, the session closes, or `deadline`.
    private func settled(_ changeSets: [ChangeSet], deadline: Duration) async throws(SyncError) {
        let unsettled = changeSets.filter { !$0.isSettled }
        guard !unsettled.isEmpty else { return }
        var remaining = Set(unsettled.map(ObjectIdentifier.init))
        let done = ReplyWaiter<Void>()
        syncWaiters.append(done)
        defer { syncWaiters.removeAll { $0 === done } }
        for changeSet in unsettled {
            let id = ObjectIdentifier(changeSet)
            changeSet.onStateChange(done) { [weak done] state in
                guard state != .syncing, remaining.remove(id) != nil, remaining.isEmpty else { return }
                done?.resolve(.success(()))
            }
        }
        try await done.wait(timeout: deadline - timeline.elapsed, clock: timeline.clock).get()
    }

    /// Holds every incoming message until `resumeIncoming()` (as Jetstream's `pauseIncoming`).
    /// Pauses nest: delivery resumes when every pause has been matched by a resume.
    public func pauseIncoming() {
        pauseDepth += 1
        if paused == nil { paused = [] }
    }

    /// Ends one `pauseIncoming()`; after the last one, processes the held messages in order and goes
    /// back to processing messages as they come. A resume without a pause does nothing.
    public func resumeIncoming() {
        guard pauseDepth > 0 else { return }
        pauseDepth -= 1
        guard pauseDepth == 0, let held = paused else { return }
        paused = nil
        receive(held)
    }

    /// Calls `body` whenever the number of unsettled local change sets changes (sync-status events).
    @discardableResult
    public func onSyncStatus(_ observer: AnyObject, _ body: @escaping @MainActor (SyncStatus) -> Void) -> ObservationToken {
        syncStatusObservers.add(observer, body)
    }

    /// The sync status as an `AsyncSequence`: the current status first, then every change.
    /// Buffering: the newest 64 unread statuses are kept. The sequence ends when the session is
    /// freed, and for a consumer whose task is cancelled.
    public func syncStatusUpdates() -> AsyncStream<SyncStatus> {
        syncStatusObservers.stream(startingWith: lastSyncStatus, bufferingPolicy: .bufferingNewest(64))
    }

    /// The current sync status.
    public var syncStatus: SyncStatus { lastSyncStatus }

    /// How many incoming messages `pauseIncoming()` holds now (for tests that must know a message
    /// arrived while paused).
    package var heldIncomingCount: Int { paused?.count ?? 0 }

    /// The number of local change sets not yet settled, over every scope.
    public var pendingChangeSets: Int { subscriptions.reduce(0) { $0 + $1.queue.count } }

    // MARK: - Connection events (from the client)

    /// A resumed connection: ask the server to resend and hold new messages until it has.
    func didResume(_ connection: Connection) {
        self.connection = connection
        isHolding = true
        connection.send(.ping(Ping(ack: lastServerIndex, resendMissing: true)))
    }

    /// A new wire session (after a fatal close or replies that never came): number from 1 again,
    /// fetch every scope again and send every pending change set again.
    func renew(_ accepted: SessionAccepted, connection: Connection) {
        token = accepted.token
        serverExtensions = accepted.extensions
        serverLimits = accepted.limits
        self.connection = connection
        nextIndex = 1
        lastServerIndex = 0
        resendBuffer.removeAll()
        resendIndices.removeAll()
        awaiting.removeAll()
        sentAt.removeAll()
        strikes.removeAll()
        inFlight = 0
        isHolding = false
        // Messages held by `pauseIncoming` belong to the old wire session (its numbering, its scope
        // indices): the refetch below supersedes them.
        if paused != nil { paused = [] }
        dropPresence()
        byScopeIndex.removeAll()
        for subscription in subscriptions {
            subscription.scopeIndex = nil
            subscription.isAttached = false
            subscription.isFetching = false
            subscription.incoming = nil
            subscription.queue.markAllUnsent()
        }
        for subscription in subscriptions { requestFetch(subscription) }
    }

    func connectionLost() {
        connection = nil
        isHolding = false
        dropPresence()
    }

    /// The server sent a message over the client's limit and the connection ended (a new session
    /// follows, since resuming would resend it). A full state awaited from a server that cannot
    /// send it in parts (Protocol §8.25) is taken to be that message: the earliest fetch awaiting
    /// its state fails with `error` (`SyncError.stateTooLarge`) and its scope leaves the session,
    /// so it is not fetched again (no reconnect loop). O(scopes).
    func messageTooLarge(_ error: SyncError) {
        let fetching = subscriptions.filter(\.isFetching)
        guard let subscription = fetching.first(where: { $0.scopeIndex != nil }) ?? fetching.first else { return }
        subscription.isFetching = false
        subscription.attached.resolve(.failure(error))
        remove(subscription)
    }

    /// The client was closed: the session ends, waiting callers fail, and its scopes' later edits
    /// are no longer queued here (fetch them into the next session). Unsettled change sets stay
    /// `syncing`; they are not carried over to another session.
    func clientClosed() {
        isClosed = true
        connection = nil
        dropPresence()
        for subscription in subscriptions {
            subscription.stopListening()
            subscription.attached.resolve(.failure(.closed))
        }
        for waiter in syncWaiters { waiter.resolve(.failure(.closed)) }
    }

    /// Sends a keep-alive ping with the acknowledgement, and checks reply deadlines. Returns
    /// `.reconnect` or `.renew` when a reply is overdue.
    func tick() -> TickAction {
        guard let connection else { return .none }
        connection.send(.ping(Ping(ack: lastServerIndex, resendMissing: false)))
        let now = timeline.elapsed
        for index in sentAt.keys { sentAt[index]?.ticks += 1 }
        let minimumTicks = max(2, Int((options.replyTimeout / options.pingInterval).rounded(.up)))
        let overdue = sentAt.filter { now - $0.value.time > options.replyTimeout && $0.value.ticks >= minimumTicks }
        guard let first = overdue.keys.min() else { return .none }
        let count = (strikes[first] ?? 0) + 1
        strikes[first] = count
        for index in sentAt.keys { sentAt[index] = (now, 0) }
        return count >= 2 ? .renew : .reconnect
    }

    enum TickAction { case none, reconnect, renew }

    // MARK: - Receiving

    func receive(_ messages: [Message]) {
        for (position, message) in messages.enumerated() {
            if paused != nil {
                paused?.append(contentsOf: messages[position...])
                return
            }
            guard process(message) else { return }
        }
    }

    /// Handles one message; false when the rest of the frame must be dropped (out of order).
    private func process(_ message: Message) -> Bool {
        let index = message.index
        if index > 0 {
            if index <= lastServerIndex { return true }
            if index != lastServerIndex + 1 {
                client?.forceReconnect()
                return false
            }
            lastServerIndex = index
        }
        switch message {
        case .ping(let ping):
            prune(ack: ping.ack)
            if ping.resendMissing {
                isHolding = false
                let now = timeline.elapsed
                for message in resendBuffer {
                    connection?.send(message)
                    if sentAt[message.index] != nil { sentAt[message.index] = (now, 0) }
                }
                pump()
                resendPresence()
            }
        case .scopeFetchReply(let reply):
            settleRequest(reply.replyTo, with: message)
        case .scopeSyncReply(let reply):
            settleRequest(reply.replyTo, with: message)
        case .scopeDetachReply(let reply):
            settleRequest(reply.replyTo, with: message)
        case .markRevisionReply(let reply):
            settleRequest(reply.replyTo, with: message)
        case .scopeState(let state):
            guard let subscription = byScopeIndex[state.scopeIndex] else { break }
            subscription.incoming = nil   // a whole state supersedes one arriving in parts
            subscription.progress?(FetchProgress(received: state.fragments.count, total: state.fragments.count))
            applyState(state, to: subscription, then: [])
        case .scopeStateChunk(let chunk):
            guard let subscription = byScopeIndex[chunk.scopeIndex] else { break }
            receivePart(chunk, of: subscription)
            // Acknowledged at once: the server sends the next parts as the acknowledged ones make room (§8.25).
            connection?.send(.ping(Ping(ack: lastServerIndex, resendMissing: false)))
        case .scopeSync(let sync):
            guard let subscription = byScopeIndex[sync.scopeIndex] else { break }
            if case .receiving(let assembly) = subscription.incoming {
                // After the state's snapshot: applied right after the state (§8.25).
                assembly.hold(sync.fragments)
                break
            }
            guard subscription.isAttached else { break }
            applyRemote(sync.fragments, to: subscription)
        case .presencePeers(let peers):
            receivePresence(peers)
        case .sessionCreate, .sessionCreateReply, .scopeFetch, .scopeDetach, .presence, .markRevision:
            break
        }
        return true
    }

    /// Applies a full state whole, then the change sets that arrived while it streamed (`held`).
    /// `prepared`: the objects made ready while the state arrived in parts.
    private func applyState(_ state: ScopeState, to subscription: ScopeSubscription, then held: [[SyncFragment]],
                            prepared: PreparedState? = nil) {
        subscription.isFetching = false
        do {
            try Self.checkComplete(state)
            try subscription.applyState(state, prepared: prepared)
            subscription.wasAttached = true
            subscription.failedRefetches = 0
            for fragments in held { applyRemote(fragments, to: subscription) }
            subscription.attached.resolve(.success(()))
            sendPresence(subscription, subscribing: true)
        } catch {
            // Refused whole (an empty state never resets a replica); a fetch awaiting it throws,
            // and `Client.lastError` says so also when none does (a state the server pushed).
            subscription.attached.resolve(.failure(error))
            client?.stateRefused(error)
        }
        pump()
    }

    /// Takes one part of a state arriving in parts (§8.25): checked against the parts before it,
    /// reported to the fetch's `progress`, and, once the last is in, applied whole. A part that
    /// does not follow refuses the state (`SyncError.invalidState`, as a bad `ScopeState` does);
    /// the rest of it is dropped.
    private func receivePart(_ chunk: ScopeStateChunk, of subscription: ScopeSubscription) {
        subscription.partsReceived += 1
        let assembly: StateAssembly
        do {
            switch subscription.incoming {
            case .receiving(let current) where chunk.offset != 0:
                assembly = current
                try assembly.take(chunk)
            case .refused where chunk.offset != 0:
                return
            default:
                assembly = try StateAssembly(first: chunk, for: subscription.scope)
            }
        } catch {
            subscription.incoming = .refused
            subscription.isFetching = false
            subscription.attached.resolve(.failure(error))
            client?.stateRefused(error)
            return
        }
        subscription.progress?(FetchProgress(received: assembly.received, total: assembly.total))
        guard assembly.isComplete else {
            subscription.incoming = .receiving(assembly)
            return
        }
        subscription.incoming = nil
        applyState(assembly.state(index: chunk.index, scopeIndex: chunk.scopeIndex), to: subscription, then: assembly.heldSyncs,
                   prepared: assembly.prepared)
    }

    /// Applies a remote change set of an attached scope (or notes it missed, in a mode that skips them).
    private func applyRemote(_ fragments: [SyncFragment], to subscription: ScopeSubscription) {
        if subscription.mode.applies {
            if !subscription.applyRemote(fragments) { requestFetch(subscription) }
        } else if !fragments.isEmpty {
            subscription.missedRemote = true
        }
    }

    /// Refuses an empty or rootless state before any of it is applied (§2.5: the root goes first).
    private static func checkComplete(_ state: ScopeState) throws(SyncError) {
        guard !state.fragments.isEmpty else { throw .invalidState("the state is empty") }
        guard state.fragments.contains(where: { $0.uuid == state.rootUUID }) else {
            throw .invalidState("the state has no fragment for its root \(state.rootUUID.wireString)")
        }
    }

    private func prune(ack: Int) {
        let acknowledged = resendIndices.prefix { $0 <= ack }.count
        resendIndices.removeFirst(acknowledged)
        resendBuffer.removeFirst(acknowledged)
    }

    private func settleRequest(_ index: Int, with reply: Message) {
        if let position = resendIndices.firstIndex(of: index) {
            resendIndices.remove(at: position)
            resendBuffer.remove(at: position)
        }
        sentAt[index] = nil
        strikes[index] = nil
        awaiting.removeValue(forKey: index)?(reply)
    }

    // MARK: - Sending

    /// Sends a sequenced request now (or when the connection is back) and calls `onReply` with its reply.
    private func request(_ make: (Int) -> Message, onReply: @escaping (Message) -> Void) -> Int {
        let index = nextIndex
        nextIndex += 1
        let message = make(index)
        resendBuffer.append(message)
        resendIndices.append(index)
        awaiting[index] = onReply
        sentAt[index] = (timeline.elapsed, 0)
        if !isHolding { connection?.send(message) }
        return index
    }

    private func requestFetch(_ subscription: ScopeSubscription) {
        guard !subscription.isFetching else { return }
        subscription.isFetching = true
        if subscription.attached.isResolved { subscription.attached = ReplyWaiter() }
        let chunks = serverExtensions.contains(ScopeStateChunk.typeName)
        _ = request({ .scopeFetch(ScopeFetch(index: $0, name: subscription.scope.name, params: subscription.params, chunks: chunks)) }) {
            [weak self, weak subscription] reply in
            guard let self, let subscription else { return }
            guard case .scopeFetchReply(let fetchReply) = reply else { return }
            // An error wins over a scope index sent alongside it.
            if fetchReply.error == nil, let scopeIndex = fetchReply.scopeIndex {
                subscription.scopeIndex = scopeIndex
                self.byScopeIndex[scopeIndex] = subscription
            } else {
                subscription.isFetching = false
                subscription.attached.resolve(.failure(.fetchFailed(fetchReply.error ?? WireErrorBody(message: "Fetch failed"))))
                // A state too large for one message (§8.25) stays so: not fetched again.
                if subscription.wasAttached, fetchReply.error?.type != "state-too-large" { self.retryFetch(subscription) }
            }
        }
    }

    /// Fetches a scope this session held again after a backoff (the reconnect policy's), unless it
    /// is attached, fetching or gone by then: a refused refetch (a scope the server could not load
    /// for now) must not leave its pending change sets waiting for good while the session is online.
    private func retryFetch(_ subscription: ScopeSubscription) {
        let delay = options.reconnect.delay(attempt: subscription.failedRefetches)
        subscription.failedRefetches += 1
        let timeline = timeline
        Task { [weak self, weak subscription] in
            guard (try? await timeline.sleep(for: delay)) != nil, let self, let subscription, !self.isClosed,
                  self.subscriptions.contains(where: { $0 === subscription }), !subscription.isAttached else { return }
            self.requestFetch(subscription)
        }
    }

    private func enqueue(_ changeSet: ChangeSet, in subscription: ScopeSubscription) {
        subscription.queue.append(changeSet)
        pump()
        reportSyncStatus()
    }

    /// Sends the change sets that may go now, oldest first, up to `maxPendingMessages` in flight.
    private func pump(forcing forced: ScopeSubscription? = nil) {
        for subscription in subscriptions where subscription.isAttached && (subscription.mode.sends || subscription === forced) {
            guard let scopeIndex = subscription.scopeIndex else { continue }
            var unsent = subscription.queue.unsent
            while let entry = unsent.first {
                guard inFlight < options.maxPendingMessages else { return }
                if let (batch, outgoing, whole) = batch(from: unsent, of: subscription, scopeIndex: scopeIndex) {
                    unsent = unsent.dropFirst(batch.count)
                    send(batch, whole: whole, outgoing: outgoing, of: subscription, scopeIndex: scopeIndex)
                } else {
                    unsent = unsent.dropFirst()
                    send(entry, of: subscription, scopeIndex: scopeIndex)
                }
            }
        }
    }

    /// The fragments `entry` sends: the subscription's (root aliases resolved), with shared values
    /// as plain values only for a server that does not merge them (§8.21).
    /// `whole` false: without the collections the change set keeps as versions (``CompactFragments``).
    private func outgoing(_ entry: ChangeSetQueue.Entry, of subscription: ScopeSubscription, whole: Bool = true) -> [SyncFragment] {
        let fragments = subscription.fragments(of: entry, whole: whole)
        guard !serverExtensions.contains(SharedMerge.textExtension) || !serverExtensions.contains(SharedMerge.counterExtension) else {
            return fragments
        }
        return fragments.map { fragment in
            var plain = fragment
            if !serverExtensions.contains(SharedMerge.textExtension) { plain.textOperations = nil }
            if !serverExtensions.contains(SharedMerge.counterExtension) { plain.counterDeltas = nil }
            return plain
        }
    }

    /// The batch the oldest of `unsent` goes in (``ChangeSetBatch``), with each member's outgoing
    /// fragments: the batch it was sent in before (the same members, to go under the same id), or
    /// a new one of the change sets that may join, within the server's limits. Nil: it goes alone
    /// (it may not join, the next one may not, coalescing is off, or the server is an original
    /// Jetstream server). O(members' fragments).
    private func batch(from unsent: ArraySlice<ChangeSetQueue.Entry>, of subscription: ScopeSubscription, scopeIndex: Int)
        -> (ChangeSetBatch, [[SyncFragment]], [SyncFragment])? {
        guard let first = unsent.first, unsent.count > 1 else { return nil }
        let frozen = first.batch
        if frozen == nil {
            guard options.coalescesChangeSets, !serverExtensions.isEmpty, ChangeSetBatch.canJoin(first, in: subscription.queue),
                  let second = unsent.dropFirst().first, second.batch == nil, ChangeSetBatch.canJoin(second, in: subscription.queue)
            else { return nil }
        }
        let maxFragments = min(serverLimits?.maxFragmentsPerMessage ?? 10_000, 10_000)
        var batch = ChangeSetBatch()
        var memberFragments: [[SyncFragment]] = []
        for entry in unsent {
            if let frozen {
                guard entry.batch == frozen else { break }
            } else {
                guard batch.count < ChangeSetBatch.maxMembers, entry.batch == nil, ChangeSetBatch.canJoin(entry, in: subscription.queue) else { break }
            }
            // Members' collections stay versions (a long list is not rebuilt per member).
            let fragments = outgoing(entry, of: subscription, whole: false)
            guard batch.fragments.count + fragments.count <= maxFragments,
                  batch.add(entry, outgoing: fragments, kept: entry.changeSet.stored.collections) else { break }
            memberFragments.append(fragments)
        }
        guard batch.count > 1 else { return nil }
        let whole = batch.whole
        let probe = Message.scopeSync(ScopeSync(index: nextIndex, scopeIndex: scopeIndex, fragments: whole, changeSetID: UUID()))
        guard Self.overLimits(serverLimits, fragments: whole, message: probe) == nil else { return nil }
        return (batch, memberFragments, whole)
    }

    /// Sends `batch` as one non-atomic `ScopeSync` under the id its members keep (a new one the
    /// first time), and settles each member from the reply (``ChangeSetBatch/replies(to:outgoing:)``).
    private func send(_ batch: ChangeSetBatch, whole: [SyncFragment], outgoing: [[SyncFragment]], of subscription: ScopeSubscription,
                      scopeIndex: Int) {
        let id = batch.entries[0].batch ?? UUID.random()
        if batch.entries[0].batch == nil {
            // Frozen from now on, and recorded (in the fragment log) before the message leaves.
            for entry in batch.entries { entry.batch = id }
            subscription.scope.onBatchSent?(id, batch.entries.map(\.changeSet))
        }
        let edits = options.sendsCollectionEdits && serverExtensions.contains(SyncFragment.collectionOpsExtension)
        let sent = edits ? whole.map { $0.withCollectionEdits() } : whole
        inFlight += 1
        let index = request({ index in .scopeSync(ScopeSync(index: index, scopeIndex: scopeIndex, fragments: sent, changeSetID: id)) }) {
            [weak self, weak subscription] reply in
            guard let self else { return }
            self.inFlight -= 1
            guard let subscription else { return }
            for (entry, (fragments, memberReply)) in zip(batch.entries, batch.replies(to: reply, outgoing: outgoing)) {
                self.settle(entry, of: subscription, fragments: fragments, reply: memberReply)
            }
        }
        for entry in batch.entries { entry.index = index }
    }

    private func send(_ entry: ChangeSetQueue.Entry, of subscription: ScopeSubscription, scopeIndex: Int) {
        // Until the reply only the fragments without their collections kept as versions wait (a
        // thousand change sets in flight do not each hold a long list); the reply's settling
        // rebuilds them.
        let skeleton = outgoing(entry, of: subscription, whole: false)
        let stored = entry.changeSet.stored
        // Collections go as edits of their bases to a server that takes them (§8.24): those kept
        // as versions as the edits the versions keep, without rebuilding the whole arrays.
        let edits = options.sendsCollectionEdits && serverExtensions.contains(SyncFragment.collectionOpsExtension)
        let sent = edits ? stored.withEdits(onto: skeleton) : stored.whole(onto: skeleton)
        let atomic: Bool? = entry.changeSet.isAtomic ? true : nil
        let id = entry.changeSet.id
        let procedure = entry.changeSet.procedure
        let message = { (index: Int) -> Message in
            .scopeSync(ScopeSync(index: index, scopeIndex: scopeIndex, fragments: sent,
                                 atomic: procedure == nil ? atomic : true, procedure: procedure, changeSetID: id))
        }
        if let rejection = Self.overLimits(serverLimits, fragments: sent, message: message(nextIndex)) {
            refuse(entry, of: subscription, rejection)
            return
        }
        // A Jetstream server (it lists no extensions) drops a frame with a null hole in an array
        // whole and without a reply (Protocol §3, §5.3): refused here with its reason instead.
        if serverExtensions.isEmpty, let reason = sent.lazy.compactMap(\.jetstreamProblem).first {
            refuse(entry, of: subscription, .unsupportedByJetstream(reason: reason))
            return
        }
        if entry.batch == nil {
            // Alone from now on, recorded (in the fragment log) before the message leaves: a server
            // may apply it under its id, and answers it as a repeat only under that id, so it never
            // joins a batch, in this run or after a restart.
            entry.batch = id
            subscription.scope.onBatchSent?(id, [entry.changeSet])
        }
        inFlight += 1
        entry.index = request(message) {
            [weak self, weak subscription, weak entry] reply in
            guard let self else { return }
            self.inFlight -= 1
            guard let subscription, let entry else { return }
            // The whole fragments only for a reply with modifications (a merge's value to compare
            // with what was sent); the skeleton has the same fragments in the same order.
            let modified = if case .scopeSyncReply(let syncReply) = reply {
                syncReply.fragmentReplies.contains { $0.modifications != nil }
            } else {
                false
            }
            self.settle(entry, of: subscription, fragments: modified ? entry.changeSet.stored.whole(onto: skeleton) : skeleton, reply: reply)
        }
    }

    /// Why `message` (carrying `fragments`) is over the server's advertised `limits`, if it is. The
    /// size is bounded from above and below first and encoded only when the limit lies between.
    static func overLimits(_ limits: SessionLimits?, fragments: [SyncFragment], message: Message) -> ChangeSet.Rejection? {
        guard let limits else { return nil }
        if let limit = limits.maxFragmentsPerMessage, fragments.count > limit {
            return .tooManyFragments(count: fragments.count, limit: limit)
        }
        if let limit = limits.maxMessageBytes, fragments.reduce(200, { $0 + 1 + $1.encodedSizeUpperBound }) > limit {
            // Over for sure without encoding anything (a 20 MB string: O(1)); encoded only between the bounds.
            let atLeast = fragments.reduce(0) { $0 + $1.encodedSizeLowerBound }
            if atLeast > limit { return .messageTooLarge(bytes: atLeast, limit: limit) }
            let bytes = MessageFrame.encodedBytes([message], asArray: false).count
            if bytes > limit { return .messageTooLarge(bytes: bytes, limit: limit) }
        }
        return nil
    }

    /// Settles a change set the server would not take without sending it: reverted locally with
    /// `rejection`, and the change sets after it go on.
    private func refuse(_ entry: ChangeSetQueue.Entry, of subscription: ScopeSubscription, _ rejection: ChangeSet.Rejection) {
        revert(entry, of: subscription, objects: nil)
        subscription.queue.remove(entry)
        entry.changeSet.settle(.reverted, rejection: rejection)
        reportSyncStatus()
    }

    /// Settles a change set from its reply (§4.8): completed, reverted, or partially reverted, then
    /// the server's modifications.
    private func settle(_ entry: ChangeSetQueue.Entry, of subscription: ScopeSubscription, fragments: [SyncFragment], reply: Message) {
        let queue = subscription.queue
        // Edits made this turn become a queued change set first, so that they hold their keys: a
        // revert or the server's values must not overwrite them (as a remote change set would not).
        subscription.scope.flush()
        guard case .scopeSyncReply(let syncReply) = reply, syncReply.fragmentReplies.count == fragments.count else {
            revert(entry, of: subscription, objects: nil)
            queue.remove(entry)
            entry.changeSet.settle(.reverted, rejection: .invalidReply)
            reportSyncStatus()
            pump()
            return
        }
        let replies = syncReply.fragmentReplies
        let rejected = Set(zip(fragments, replies).filter { !$0.1.isAccepted }.map(\.0.uuid))
        // A repeated change set's reply carries the scope's current values, not its merge's result:
        // what others did since is not a drop (and what its first merge dropped is not known).
        let drops = syncReply.repeated ? [] : Self.drops(fragments: fragments, replies: replies)
        var state: ChangeSet.State
        if rejected.isEmpty {
            state = .completed
        } else {
            let all = replies.allSatisfy { !$0.isAccepted }
            revert(entry, of: subscription, objects: all ? nil : rejected)
            state = all ? .reverted : .partiallyReverted
        }
        if state == .completed && !drops.isEmpty { state = .partiallyReverted }
        if state != .reverted { queue.handOver(entry, except: rejected) }
        let rejection = replies.first { !$0.isAccepted }?.error.map(ChangeSet.Rejection.refusedByServer)
        var complete = true
        for (fragment, fragmentReply) in zip(fragments, replies) {
            // A value the server answers with that is the one the change set sent (a merge that kept
            // it) changes nothing here: no rebase of the change sets after it. Not so for a shared
            // counter: the replica shows the last known total plus the pending deltas, and that total
            // may already count this change set's delta (a repeat's state after a restart, §8.11).
            if let modifications = fragmentReply.modifications?.filter({
                fragment.properties[$0.key] != $0.value || subscription.isCounter($0.key, of: fragment.uuid)
            }), !modifications.isEmpty,
               !subscription.applyModifications(modifications, to: fragment.uuid, after: entry) {
                complete = false
            }
        }
        if !complete { requestFetch(subscription) }
        queue.remove(entry)
        entry.changeSet.settle(state, rejection: rejection, drops: drops)
        reportSyncStatus()
        pump()
    }

    /// The elements the accepted fragments inserted or moved in a collection sent with its base that
    /// the server's merged value (in `modifications`, Protocol §8.15; absent when it is what a
    /// collection sent as an edit made, §8.24) left out.
    static func drops(fragments: [SyncFragment], replies: [FragmentReply]) -> [ChangeSet.Drop] {
        var drops: [ChangeSet.Drop] = []
        for (fragment, reply) in zip(fragments, replies) where reply.isAccepted {
            guard let bases = fragment.bases, let modifications = reply.modifications else { continue }
            for key in bases.keys.sorted() {
                guard let base = bases[key], let sent = fragment.properties[key], let merged = modifications[key] else { continue }
                let kept = Set(Self.uuids(merged))
                for element in CollectionMerge.placed(base: base, new: Self.uuids(sent)) where !kept.contains(element) {
                    drops.append(ChangeSet.Drop(object: fragment.uuid, property: key, element: element, reason: .removedConcurrently))
                }
            }
        }
        return drops
    }

    private static func uuids(_ value: JSON) -> [UUID] {
        guard case .array(let elements) = value else { return [] }
        return elements.compactMap { $0.stringValue.flatMap(UUID.init(wireString:)) }
    }

    /// Reverts `entry` locally. Objects a revert brings back into the tree missed the remote changes
    /// made while they were out of it, remote values its adds held back are missing, a value kept
    /// whole (§8.23) holds its hidden elements where they were when it was made (a reference's,
    /// replaced, is gone with the unknown object it named), and text its
    /// shared texts' deletions took comes back under ids another replica may have deleted meanwhile
    /// (a deletion of a deleted character changes nothing here), so the scope is fetched again when
    /// any of these happens.
    private func revert(_ entry: ChangeSetQueue.Entry, of subscription: ScopeSubscription, objects: Set<UUID>?) {
        let scope = subscription.scope
        let before = scope.count
        let known = Set(scope.allObjects.map(ObjectIdentifier.init))
        // A value kept whole beside the property (it holds objects of unknown classes, §8.23) goes
        // back woven from what it held, which may not be where the server holds them now.
        // A reference's kept whole value the change set replaced is gone, with the object it named.
        let keptWhole = entry.changeSet.changes.contains { change in
            change.touches(objects) && scope.keepsWholeValue(of: change.object, at: change.property)
        } || entry.changeSet.replacedKeptReferences.contains { objects?.contains($0) ?? true }
        subscription.queue.revert(entry, objects: objects)
        subscription.queue.prefixTextRepairs(after: entry, objects: objects)
        let returned = scope.count > before || scope.allObjects.contains { !known.contains(ObjectIdentifier($0)) }
        let retyped = entry.changeSet.changes.contains { change in
            change.touches(objects) && (change.old as? SharedText)?.rollsBackDeletions == true
        }
        if returned || retyped || keptWhole || entry.heldBackRemoteValues { requestFetch(subscription) }
    }

    // MARK: - Helpers

    private func subscription(for scope: Scope) -> ScopeSubscription? {
        subscriptions.first { $0.scope === scope }
    }

    private func remove(_ subscription: ScopeSubscription) {
        subscription.stopListening()
        subscription.stopPresence()
        subscriptions.removeAll { $0 === subscription }
        if let index = subscription.scopeIndex { byScopeIndex[index] = nil }
        if subscription.scope.syncOwner === self { subscription.scope.syncOwner = nil }
    }

    private func reportSyncStatus() {
        let pending = pendingChangeSets
        let status: SyncStatus = pending == 0 ? .synced : .syncing(pending: pending)
        guard status != lastSyncStatus else { return }
        lastSyncStatus = status
        syncStatusObservers.notify(status)
    }
}
