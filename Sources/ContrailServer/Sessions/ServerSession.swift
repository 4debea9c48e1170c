import ContrailSupport
import ContrailWire
import ContrailWebSocket
import Foundation
import Synchronization

/// One client's session on the server: outlives reconnects, found by its token. Handles the
/// client's messages in arrival order: sequencing (§8.5), acks and resends (§1.6), fetches and
/// syncs (handed to the scope actors). Its outgoing side is the ``SessionOutbox``.
actor ServerSession {
    /// What the connection should do after a frame.
    enum Verdict: Sendable {
        case proceed
        /// Close the connection (the session survives).
        case close(code: UInt16, reason: WireErrorBody)
    }

    /// A number for log lines (the token is never logged).
    nonisolated let number: Int
    nonisolated let token: String
    nonisolated let outbox: SessionOutbox
    /// Who the session acts for: decided when it was created, fixed for its life.
    nonisolated let identity: SessionIdentity
    /// When the identity's credential expires, on the server's clock (read by the ``SessionTicker``).
    nonisolated let credentialDeadline: ElapsedClock.Instant?
    private let core: ServerCore
    /// Whether the server has procedures (the app's code, which a scope's apply runs).
    private let runsProcedures: Bool
    private var lastClientIndex = 0
    /// The `lastClientIndex` at which we last asked for a resend, so a gap is reported once.
    private var resendRequestedAt: Int?
    /// The scopes this session fetched, by the scope index it was given. A detached scope's index
    /// is not given out again, so a late message naming it cannot reach another scope.
    private var scopes = FetchedScopes()
    /// When the client was last heard from (read by the ``SessionTicker`` for expiry).
    private nonisolated let lastActivity: SanitizerVisibleMutex<ElapsedClock.Instant>
    private var connection: ServerConnection?
    /// Whether the session is waiting for its client to come back: it had a connection and has none
    /// now (read by the ``SessionTicker``, which bounds the memory of waiting sessions together).
    nonisolated var isWaiting: Bool { waiting.load(ordering: .relaxed) }
    private nonisolated let waiting = Atomic<Bool>(false)
    /// Counts the connections attached, so presence knows which one subscribed (§8.20).
    private var attachment = 0
    /// The session's id in other sessions' presence (§8.20): random, never derived from the token.
    nonisolated let presenceID = UUID().uuidString.lowercased()
    /// The user shown with the session's presence: the identity's, when the server authenticates.
    nonisolated var presenceUser: String? {
        identity == .unrestricted || identity.user.isEmpty ? nil : identity.user
    }
    /// Whether the ticker watches this session for expiry (from the first attach).
    private var watched = false
    private(set) var isEnded = false

    init(number: Int, token: String, identity: SessionIdentity, receivesOrigins: Bool = false, receivesCollectionEdits: Bool = false,
         core: ServerCore) {
        self.number = number
        self.token = token
        self.identity = identity
        self.credentialDeadline = identity.expiry.map { core.clock.now + .seconds(max(0, $0.timeIntervalSinceNow)) }
        self.core = core
        self.runsProcedures = !core.options.procedures.isEmpty
        self.lastActivity = SanitizerVisibleMutex(core.clock.now)
        let limits = core.limits
        let origin = JSON.object(["session": .int(Int64(number)), "user": .string(identity.user)]).serialized(sortedKeys: true)
        self.outbox = SessionOutbox(limitBytes: limits.maxResendBytes, origin: String(decoding: origin, as: UTF8.self),
                                    receivesOrigins: receivesOrigins, receivesCollectionEdits: receivesCollectionEdits) { [token] reason in
            core.expireSession(token: token, reason: reason)
        }
    }

    // MARK: Connections

    /// Makes `connection` the one the session sends on. Returns the connection it replaces, which
    /// the caller closes. Returns nil and `false` if the session has ended.
    func attach(_ connection: ServerConnection) -> (accepted: Bool, previous: ServerConnection?) {
        guard !isEnded else { return (false, nil) }
        let previous = self.connection
        self.connection = connection
        waiting.store(false, ordering: .relaxed)
        attachment += 1
        lastActivity.withLock { $0 = core.clock.now }
        if !watched {
            watched = true
            core.ticker.watch(self)
        }
        return (true, previous === connection ? nil : previous)
    }

    /// Forgets `connection` if it is the current one; the session leaves the presence it
    /// subscribed through it.
    func detach(_ connection: ServerConnection) async {
        guard self.connection === connection else { return }
        self.connection = nil
        waiting.store(true, ordering: .relaxed)
        await core.presence.disconnected(self, attachment: attachment)
    }

    /// When the client was last heard from.
    nonisolated var idleSince: ElapsedClock.Instant { lastActivity.withLock { $0 } }

    /// Ends the session if its credential expired, or nothing arrived for `expiry`. Returns whether it has ended.
    func expireIfIdle(_ expiry: Duration) async -> Bool {
        guard !isEnded else { return true }
        if let credentialDeadline, core.clock.now >= credentialDeadline {
            await expire(reason: .credentialExpired)
            return true
        }
        guard core.clock.now - idleSince >= expiry else { return false }
        await expire(reason: nil)
        return true
    }

    /// Ends the session: forgets its token, leaves its scopes and closes its connection with 4097.
    func expire(reason: WireErrorBody?) async {
        guard !isEnded else { return }
        isEnded = true
        core.ticker.forget(self)
        core.removeSession(token: token)
        core.metrics.sessionClosed(Self.closeReason(reason))
        core.log.write("session.ended", session: number, "session \(number) ended: \(reason?.message ?? "expired")")
        let connection = self.connection
        self.connection = nil
        await core.presence.disconnected(self, attachment: nil)
        for scope in scopes.all {
            await scope.unsubscribe(outbox)
            core.releaseScope(named: scope.name)
        }
        await connection?.close(code: JetstreamCloseCode.expired, reason: reason?.closeReason() ?? "")
    }

    /// What the admin surface lists of this session: its identity, its client's address (nil while
    /// no connection is attached), the scopes it fetched and the bytes waiting for acknowledgement.
    func adminInfo() -> AdminSession {
        AdminSession(number: number, user: identity.user, isAdmin: identity.isAdmin, address: connection?.peer,
                     scopes: scopes.all.map(\.name), bytesQueued: outbox.unackedBytes)
    }

    /// The metrics label of an expiry's reason.
    private static func closeReason(_ reason: WireErrorBody?) -> ServerMetrics.CloseReason {
        switch reason?.type {
        case nil: .expired
        case WireErrorBody.sessionRevoked.type: .revoked
        case WireErrorBody.credentialExpired.type: .credentialExpired
        default: .resendOverflow
        }
    }

    /// Stops timers without closing anything (server stop).
    func shutDown() {
        isEnded = true
        core.ticker.forget(self)
    }

    // MARK: Incoming frames

    /// Handles frames from the client, in order, as if one at a time. Consecutive `ScopeSync`s of one
    /// scope go to it together, in one turn of the scope: one hop to its actor and back for the run
    /// instead of one per change set (the scope applies them one by one, as it would have).
    func handle(_ frames: [String]) async -> Verdict {
        lastActivity.withLock { $0 = core.clock.now }
        var run: [CheckedSync] = []   // consecutive syncs of one scope, not yet applied
        for frame in frames {
            let items: [IncomingItem]
            do { items = try decode(frame) } catch {
                await apply(&run)
                return .close(code: JetstreamCloseCode.badInput, reason: error.reason)
            }
            for item in items {
                guard case .message(.scopeSync(let sync)) = item else {
                    await apply(&run)
                    let verdict = await process(item)
                    if case .close = verdict { return verdict }
                    continue
                }
                outbox.releaseBacklog()
                guard accept(sequenced: sync.index) else {
                    await apply(&run)
                    let verdict = sequenceVerdict(sync.index)
                    if case .close = verdict { return verdict }
                    continue
                }
                switch check(sync) {
                case .ready(let checked):
                    if let first = run.first, first.scope !== checked.scope { await apply(&run) }
                    run.append(checked)
                case .refused(let error):
                    await apply(&run)
                    reject(sync, error)
                }
            }
        }
        await apply(&run)
        return .proceed
    }

    /// Why a frame closes the connection (with `badInput`): it is too big, not JSON or not messages.
    private struct BadFrame: Error {
        let reason: WireErrorBody
    }

    /// The items of one frame, in index order.
    private func decode(_ frame: String) throws(BadFrame) -> [IncomingItem] {
        let limits = core.limits
        guard frame.utf8.count <= limits.maxMessageBytes else {
            throw BadFrame(reason: .limitExceeded("Message of \(frame.utf8.count) bytes is over the limit of \(limits.maxMessageBytes) bytes"))
        }
        let jsonLimits = JSONLimits(maxBytes: limits.maxMessageBytes)
        var frame = frame
        if let syncs = frame.withUTF8({ ScopeSyncDecoder.decode(UnsafeRawBufferPointer($0), limits: jsonLimits) }) {
            return inIndexOrder(syncs.map { IncomingItem.message(.scopeSync($0)) })
        }
        let json: JSON
        do {
            json = try JSON(parsing: frame, limits: jsonLimits)
        } catch {
            throw BadFrame(reason: .badInput("Could not parse message input, input was not JSON: \(error)"))
        }
        let results: [Result<Message, WireError>]
        do { results = try MessageFrame.decodeEach(json) } catch {
            throw BadFrame(reason: .badInput(error.description))
        }
        var items: [IncomingItem] = []
        items.reserveCapacity(results.count)
        for result in results {
            switch result {
            case .success(let message):
                items.append(.message(message))
            case .failure(.invalidScopeSyncFragments(let index, _, let reasons)):
                items.append(.invalidSync(index: index, reasons: reasons))
            case .failure(.unknownMessageType("Reply")):
                continue   // §2.9: the abstract Reply is parsed and ignored
            case .failure(let error):
                throw BadFrame(reason: .badInput(error.description))
            }
        }
        return inIndexOrder(items)
    }

    /// `items` sorted by index, keeping frame order among equal ones (a frame of one is as it is).
    private func inIndexOrder(_ items: [IncomingItem]) -> [IncomingItem] {
        guard items.count > 1 else { return items }
        return items.enumerated().sorted { ($0.element.index, $0.offset) < ($1.element.index, $1.offset) }.map(\.element)
    }

    private func process(_ item: IncomingItem) async -> Verdict {
        if case .message(.ping(let ping)) = item, ping.resendMissing {
            outbox.resend(after: ping.ack)
            return .proceed
        }
        // A resumed client that does not start with the resend exchange gets its backlog now.
        outbox.releaseBacklog()
        switch item {
        case .message(.ping(let ping)):
            outbox.acknowledge(ping.ack)
            return .proceed
        case .message(.sessionCreate):
            core.log.write("session.ignored_message", level: .warning, session: number, "session \(number): ignored a SessionCreate on an established session")
            return .proceed
        case .message(.scopeFetch(let fetch)):
            // The fetch hook is the app's, and a state is as big as its scope: neither runs on a loop.
            guard accept(sequenced: fetch.index) else { return sequenceVerdict(fetch.index) }
            await OffLoopExecutor.run { await handleFetch(fetch) }
            return .proceed
        case .message(.scopeSync):
            assertionFailure("handle(_:) takes ScopeSyncs in runs")
            return .proceed
        case .message(.scopeDetach(let detach)):
            guard accept(sequenced: detach.index) else { return sequenceVerdict(detach.index) }
            await handleDetach(detach)
            return .proceed
        case .message(.markRevision(let mark)):
            guard accept(sequenced: mark.index) else { return sequenceVerdict(mark.index) }
            await OffLoopExecutor.run { await handleMarkRevision(mark) }
            return .proceed
        case .message(.presence(let update)):
            // Unsequenced and never answered. Only a fetched scope (read access) has an index.
            guard let scope = scopes[update.scopeIndex] else {
                core.log.write("presence.ignored", level: .warning, session: number, "session \(number): Presence for unknown scope index \(update.scopeIndex) ignored")
                return .proceed
            }
            await core.presence.publish(update.value, scope: scope.name, scopeIndex: update.scopeIndex, from: self,
                                        attachment: attachment)
            return .proceed
        case .invalidSync(let index, let reasons):
            guard accept(sequenced: index) else { return sequenceVerdict(index) }
            core.log.write("sync.rejected", level: .warning, session: number, "session \(number): ScopeSync \(index) has invalid fragments")
            core.metrics.changeSetRefused(fragments: reasons.count)
            let replies = reasons.map { reason in
                FragmentReply.rejected(reason.map { WireErrorBody(message: $0) }
                    ?? .couldNotApplySyncMessage("other fragments of this message are invalid"))
            }
            outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: index, fragmentReplies: replies))) }
            return .proceed
        case .message(let other):
            return .close(code: JetstreamCloseCode.badInput, reason: .badInput("A client may not send \(other.typeName)"))
        }
    }

    /// The strict index rule (§8.5): only `last + 1` is processed.
    private func accept(sequenced index: Int) -> Bool {
        guard index == lastClientIndex + 1 else { return false }
        lastClientIndex = index
        resendRequestedAt = nil
        outbox.setClientIndex(index)
        return true
    }

    /// What to do with a sequenced message that is not `last + 1`.
    private func sequenceVerdict(_ index: Int) -> Verdict {
        if index == 0 {
            return .close(code: JetstreamCloseCode.badInput, reason: .badInput("ScopeFetch, ScopeSync and ScopeDetach need an index of 1 or more"))
        }
        if index > lastClientIndex + 1, resendRequestedAt != lastClientIndex {
            // Something was lost: ask the client to resend everything after our last index.
            resendRequestedAt = lastClientIndex
            core.log.write("session.resend_requested", level: .warning, session: number, "session \(number): got message \(index) after \(lastClientIndex); asked for a resend")
            outbox.enqueueResendRequest()
        }
        return .proceed  // lower: a duplicate, ignored
    }

    private func handleFetch(_ fetch: ScopeFetch) async {
        if let problem = ScopeName.problem(with: fetch.name) {
            core.log.write("fetch.refused", level: .warning, session: number, "session \(number): fetch refused: \(problem.message)")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, error: problem))) }
            return
        }
        guard identity.may(.read, fetch.name) else {
            let denial = WireErrorBody.forbidden("User '\(identity.user)' may not read scope '\(fetch.name)'")
            core.log.write("fetch.denied", level: .warning, session: number, scope: fetch.name, "session \(number): fetch of '\(fetch.name)' denied: \(denial.message)")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, error: denial))) }
            return
        }
        if let denial = await core.options.fetchHook(fetch.name, fetch.params, identity) {
            core.log.write("fetch.denied", level: .warning, session: number, scope: fetch.name, "session \(number): fetch of '\(fetch.name)' denied: \(denial.message)")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, error: denial))) }
            return
        }
        let scopeIndex: Int
        let scope: any HostedScope
        if let existing = scopes.named(fetch.name) {
            (scopeIndex, scope) = existing
        } else if scopes.count >= core.limits.maxScopesPerSession {
            let limit = core.limits.maxScopesPerSession
            core.log.write("fetch.refused", level: .warning, session: number, scope: fetch.name, "session \(number): fetch of '\(fetch.name)' refused: the session holds \(limit) scopes")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, error: .limitExceeded(
                "Session holds the maximum of \(limit) scopes")))) }
            return
        } else {
            let named: any HostedScope
            switch core.holdScope(named: fetch.name) {
            case .stopped: return  // the connection closes
            case .refused(let error):
                core.log.write("fetch.refused", level: .warning, session: number, scope: fetch.name, "session \(number): fetch of '\(fetch.name)' refused: \(error.message)")
                outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: fetch.index, error: error))) }
                return
            case .scope(let held): named = held
            }
            scope = named
            scopeIndex = scopes.add(named, writable: identity.may(.write, fetch.name))
            core.log.write("scope.fetched", session: number, scope: fetch.name, "session \(number): fetched '\(fetch.name)' as scope \(scopeIndex)")
        }
        await scope.fetch(outbox: outbox, scopeIndex: scopeIndex, replyTo: fetch.index, chunks: fetch.chunks)
    }

    /// What ``check(_:)`` found.
    private enum SyncCheck {
        case ready(CheckedSync)
        /// The session refuses the sync: it never reaches the scope.
        case refused(WireErrorBody)
    }

    /// `sync` ready for its scope, or why the session refuses it.
    private func check(_ sync: ScopeSync) -> SyncCheck {
        let limit = core.limits.maxFragmentsPerMessage
        guard let (scope, writable) = scopes.entry(index: sync.scopeIndex) else {
            return .refused(.scopeIndexNotFound(sync.scopeIndex))
        }
        // The grant check, decided once at fetch (the identity is fixed): a flag read per message.
        // The one place that decides on writes: a write it refuses never reaches the scope, so it
        // neither changes nor creates it (``ScopeCreation/write``).
        guard writable else {
            return .refused(.forbidden("User '\(identity.user)' may not write scope '\(scope.name)'"))
        }
        guard sync.fragments.count <= limit else {
            return .refused(.limitExceeded("ScopeSync has \(sync.fragments.count) fragments, over the limit of \(limit)"))
        }
        // §8.1: dates as epoch seconds. Only Jetstream's own clients send them as ISO strings, and
        // only Contrail clients send a change-set id: their strings stay strings, whatever they look like.
        // Broadcasts carry the fragments as received (§4.10), so Jetstream's JS clients read each
        // other's dates.
        guard sync.changeSetID == nil, let converted = CanonicalDate.converted(sync.fragments) else {
            return .ready(CheckedSync(scope: scope, message: sync, received: nil))
        }
        var canonical = sync
        canonical.fragments = converted
        return .ready(CheckedSync(scope: scope, message: canonical, received: sync.fragments))
    }

    /// Hands the run's syncs to their scope in one turn, and empties the run.
    private func apply(_ run: inout [CheckedSync]) async {
        guard let scope = run.first?.scope else { return }
        let syncs = run
        run = []
        // Procedures are the app's code, run by the scope's apply: then the apply is off the loop.
        if runsProcedures {
            await OffLoopExecutor.run { await scope.sync(syncs, from: self.outbox, identity: self.identity) }
        } else {
            await scope.sync(syncs, from: outbox, identity: identity)
        }
    }

    /// Answers every fragment of `sync` with `error`.
    private func reject(_ sync: ScopeSync, _ error: WireErrorBody) {
        core.log.write("sync.rejected", level: .warning, session: number, "session \(number): ScopeSync \(sync.index) rejected: \(error.message)")
        core.metrics.changeSetRefused(fragments: sync.fragments.count)
        let replies = Array(repeating: FragmentReply.rejected(error), count: sync.fragments.count)
        outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: sync.index, fragmentReplies: replies))) }
    }

    /// `MarkRevision` (Contrail extension, §8.26): names the scope's state after this session's
    /// earlier change sets (each applied before the next message is read); needs the write grant.
    private func handleMarkRevision(_ mark: MarkRevision) async {
        let replyTo = mark.index
        var sequence: Int?
        var error: WireErrorBody?
        if let (scope, writable) = scopes.entry(index: mark.scopeIndex) {
            if !writable {
                error = .forbidden("User '\(identity.user)' may not write scope '\(scope.name)'")
            } else {
                do throws(AdminError) {
                    sequence = try await scope.markRevision(mark.label, user: identity.user).sequence
                } catch let refusal {
                    let type = switch refusal {
                    case .revisionExists: "revision-exists"
                    case .invalidRevision: "invalid-revision"
                    default: "revision-refused"
                    }
                    error = WireErrorBody(message: refusal.description, type: type)
                }
            }
        } else {
            error = .scopeIndexNotFound(mark.scopeIndex)
        }
        if let error {
            core.log.write("revision.rejected", level: .warning, session: number, "session \(number): MarkRevision \(replyTo) rejected: \(error.message)")
        }
        outbox.enqueue { [sequence, error] in .message(.markRevisionReply(MarkRevisionReply(index: $0, replyTo: replyTo, sequence: sequence, error: error))) }
    }

    /// `ScopeDetach` (Contrail extension): forgets the scope index and leaves the scope, then
    /// replies after the scope's last broadcast to this session. An unknown index gets an error reply.
    private func handleDetach(_ detach: ScopeDetach) async {
        let replyTo = detach.index
        guard let scope = scopes.remove(index: detach.scopeIndex) else {
            let error = WireErrorBody.scopeIndexNotFound(detach.scopeIndex)
            core.log.write("detach.rejected", level: .warning, session: number, "session \(number): ScopeDetach \(replyTo) rejected: \(error.message)")
            outbox.enqueue { .message(.scopeDetachReply(ScopeDetachReply(index: $0, replyTo: replyTo, error: error))) }
            return
        }
        core.log.write("scope.detached", session: number, scope: scope.name, "session \(number): detached '\(scope.name)' (scope \(detach.scopeIndex))")
        await core.presence.leave(scope: scope.name, session: self)
        core.releaseScope(named: scope.name)
        let outbox = self.outbox
        await scope.unsubscribe(outbox) {
            outbox.enqueue { .message(.scopeDetachReply(ScopeDetachReply(index: $0, replyTo: replyTo))) }
        }
    }
}
