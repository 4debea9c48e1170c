import ContrailWire
import Foundation

/// The state machine both ``HostedScope`` implementations share: the sessions subscribed to a scope,
/// the cached `ScopeState` text, and what a fetch or a change set applied to the scope's
/// ``ScopeStore`` queues for them. A value owned by its scope actor; the store stays with the
/// actor (a ``LocalScope`` unloads it while subscriptions stay).
///
/// It does no I/O and never waits: it returns what to queue as a `deliver` closure, which the
/// owner runs when the outcome may be seen (a ``LocalScope`` once the change set's log record is
/// durable, a ``ClusterScope`` once the log has ordered it).
struct ScopeCore {
    /// A session subscribed to the scope.
    private struct Subscriber {
        let outbox: SessionOutbox
        let scopeIndex: Int
    }

    /// What one `ScopeSync` came to.
    enum ChangeSet {
        /// Refused before anything was applied (its procedure failed): queue the reply at once.
        case refused(deliver: @Sendable () -> Void)
        /// Applied, but nothing was accepted: queue the reply after the scope's earlier writes.
        case unchanged(deliver: @Sendable () -> Void)
        /// Something was accepted: `logged` (the accepted fragments, then the procedure's follow-ups)
        /// is the change set's record; queue the broadcasts and the reply once it is durable.
        case accepted(logged: [SyncFragment], deliver: @Sendable () -> Void)
    }

    /// The scope's name.
    let name: String
    private let limits: ServerLimits
    private let procedures: [ServerProcedure]
    /// Where applied change sets and broadcasts are counted (nil: nowhere).
    private let metrics: ServerMetrics?
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]
    /// The `fragments` text of the current full state, until the next change (only for a scope of
    /// at most ``maxCachedStateObjects``).
    private var cachedState: String?
    /// The current full state in parts (§8.25), until the next change (likewise).
    private var cachedParts: [ScopeStateChunk.Part]?
    /// The most objects of a scope whose state text is kept between fetches. A bigger scope's text
    /// would about double what the scope costs in memory (its compact store holds an object in
    /// fewer bytes than its JSON): each fetch encodes it anew, and the sessions streaming it at the
    /// same time share that copy until they are done.
    static let maxCachedStateObjects = 20_000
    /// Collection values an edit may name as its base besides the current one (§8.24); nil in a
    /// cluster, where every server must resolve an edit alike.
    private var recentCollections: RecentCollections?

    init(name: String, limits: ServerLimits, procedures: [ServerProcedure], metrics: ServerMetrics? = nil,
         keepsRecentCollections: Bool = false) {
        self.name = name
        self.limits = limits
        self.procedures = procedures
        self.metrics = metrics
        if keepsRecentCollections { recentCollections = RecentCollections() }
    }

    /// The number of subscribed sessions.
    var subscriberCount: Int { subscribers.count }

    /// Forgets the cached state text (the store was replaced or unloaded).
    mutating func storeReplaced() {
        forgetState()
    }

    private mutating func forgetState() {
        cachedState = nil
        cachedParts = nil
    }

    /// Subscribes the session owning `outbox` as `scopeIndex` and returns what queues
    /// `ScopeFetchReply` then the state of `store`, with no broadcast in between: one `ScopeState`,
    /// or for a client that asked for `chunks` a state of more than one part as a stream of
    /// `ScopeStateChunk`s (§8.25; broadcasts queued later go out between the parts and follow the
    /// state). A state too large for one message, to a client that did not ask for chunks, is
    /// refused with a `state-too-large` fetch error and no subscription. O(objects) the first time
    /// after a change, O(1) while the state is cached (a scope of at most ``maxCachedStateObjects``);
    /// O(1) for a bigger scope streamed in chunks, whose parts are encoded by a task of their own.
    mutating func subscribe(_ outbox: SessionOutbox, scopeIndex: Int, replyTo: Int, store: ScopeStore,
                            chunks: Bool = false) -> @Sendable () -> Void {
        let root = store.rootUUID.wireString
        let accepted = { @Sendable in
            _ = outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo, scopeIndex: scopeIndex))) }
        }
        if chunks, store.objectCount > max(Self.maxCachedStateObjects, limits.stateChunkObjects) {
            // A big state: its parts are encoded off this actor, from a snapshot of the store (a
            // copy on write), and go out as they come, the first while the rest is being encoded.
            subscribers[ObjectIdentifier(outbox)] = Subscriber(outbox: outbox, scopeIndex: scopeIndex)
            let id = StateStream.ID()
            let snapshot = store
            let (maxObjects, maxBytes) = (limits.stateChunkObjects, limits.stateChunkBytes)
            return {
                accepted()
                outbox.enqueueStream(StateStream(scopeIndex: scopeIndex, rootUUID: root, producedAs: id))
                Task.detached { snapshot.stream(to: outbox, as: id, maxObjects: maxObjects, maxBytes: maxBytes) }
            }
        }
        if chunks {
            let parts = cachedParts ?? ScopeStateChunk.parts(of: store.stateFragments(), maxObjects: limits.stateChunkObjects,
                                                             maxBytes: limits.stateChunkBytes)
            if store.objectCount <= Self.maxCachedStateObjects { cachedParts = parts }
            if parts.count > 1 {
                subscribers[ObjectIdentifier(outbox)] = Subscriber(outbox: outbox, scopeIndex: scopeIndex)
                let stream = StateStream(scopeIndex: scopeIndex, rootUUID: root, parts: parts)
                return {
                    accepted()
                    outbox.enqueueStream(stream)
                }
            }
            if cachedState == nil, store.objectCount <= Self.maxCachedStateObjects { cachedState = parts.first?.text }
        }
        let fragments = cachedState ?? String(decoding: SyncFragment.serialized(store.stateFragments()), as: UTF8.self)
        if store.objectCount <= Self.maxCachedStateObjects { cachedState = fragments }
        let limit = min(outbox.limitBytes, limits.maxMessageBytes)
        guard fragments.utf8.count + 128 <= limit else {
            let objects = store.objects.count
            let reason = WireErrorBody.stateTooLarge(
                "The state of scope '\(name)' (\(objects) objects, \(fragments.utf8.count) bytes) is over the limit of \(limit) bytes "
                    + "for one ScopeState; a client that speaks ScopeStateChunk (Protocol §8.25) can fetch it")
            return { outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo, error: reason))) } }
        }
        subscribers[ObjectIdentifier(outbox)] = Subscriber(outbox: outbox, scopeIndex: scopeIndex)
        return {
            accepted()
            outbox.enqueue { .scopeState(index: $0, scopeIndex: scopeIndex, rootUUID: root, fragments: fragments) }
        }
    }

    /// Removes the subscription of the session owning `outbox`, and the parts of its state not yet sent.
    mutating func unsubscribe(_ outbox: SessionOutbox) {
        if let subscriber = subscribers.removeValue(forKey: ObjectIdentifier(outbox)) {
            outbox.cancelStreams(scopeIndex: subscriber.scopeIndex)
        }
    }

    /// Ends the session of every subscriber with `reason` (the scope can no longer vouch for what it
    /// sent them: their clients start over with a fresh fetch). O(subscribers).
    func endSubscribers(_ reason: WireErrorBody) {
        for subscriber in subscribers.values { subscriber.outbox.end(reason) }
    }

    /// Forgets every subscription (the scope closed), and the parts of their states not yet sent.
    mutating func unsubscribeAll() {
        for subscriber in subscribers.values { subscriber.outbox.cancelStreams(scopeIndex: subscriber.scopeIndex) }
        subscribers = [:]
    }

    /// What queues `fragments` as a `ScopeSync` to every subscriber (nothing when empty): what a
    /// cluster replica's sessions missed when it restored a newer snapshot.
    mutating func broadcast(_ fragments: [SyncFragment]) -> @Sendable () -> Void {
        forgetState()
        guard !fragments.isEmpty else { return {} }
        let text = String(decoding: SyncFragment.serialized(fragments), as: UTF8.self)
        let everyone = Array(subscribers.values)
        metrics?.fannedOut(everyone.count)
        return {
            for subscriber in everyone {
                let scopeIndex = subscriber.scopeIndex
                subscriber.outbox.enqueue { .scopeSync(index: $0, scopeIndex: scopeIndex, fragments: text) }
            }
        }
    }

    /// Runs `message`'s procedure (if it names one) and applies the change set and the procedure's
    /// follow-ups to `store`. The returned `deliver` queues the broadcasts (to every other
    /// subscriber; the follow-ups to every subscriber, the caller included, before its reply, §4.10)
    /// and the reply to `origin`; a nil `origin` (a change set another cluster server published)
    /// gets no reply. `identity`: the sending session's, for the procedure (nil: a change set from
    /// another cluster server, which names no procedure). `received`: the fragments as the client
    /// sent them, which the broadcast carries. `hold`: when given, the reply to an unchanged or
    /// accepted change set is queued held (``HeldReply``), for the caller to release once durable.
    mutating func apply(_ message: ScopeSync, to store: inout ScopeStore, from origin: SessionOutbox?,
                        identity: SessionIdentity? = nil, received: [SyncFragment]? = nil, hold: HeldReply? = nil) -> ChangeSet {
        let replyTo = message.index
        let answer = { @Sendable (make: (Int) -> OutgoingMessage) in
            guard let origin else { return }
            if let hold { hold.place(make, in: origin) } else { origin.enqueue(make) }
        }
        // Collection edits (§8.24) become arrays with their bases, so that what follows is the
        // merge of §8.4, unchanged (a repeat is answered with current values instead).
        var message = message
        var edits = CollectionEdits()
        if !(message.changeSetID.map(store.wasApplied) ?? false) {
            edits.resolve(&message.fragments, in: store, recent: recentCollections)
        }
        var followUps: [SyncFragment] = []
        if let procedure = message.procedure {
            do throws(ProcedureError) {
                followUps = try ServerProcedure.run(procedure, among: procedures, scopeName: name, fragments: message.fragments,
                                                    identity: identity) {
                    store.objects[$0]?.properties[$1]
                }
            } catch {
                if origin != nil { metrics?.changeSetRefused(fragments: message.fragments.count) }
                let replies = Array(repeating: FragmentReply.rejected(.couldNotApplySyncMessage(error.description)),
                                    count: message.fragments.count)
                return .refused { origin?.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: replyTo, fragmentReplies: replies))) } }
            }
        }
        let outcome = store.apply(message.fragments, atomic: message.atomic == true, maxObjects: limits.maxObjectsPerScope,
                                  changeSetID: message.changeSetID)
        // A procedure's follow-up updates apply right after the change set that called it, in the
        // same log record.
        let followed = outcome.accepted.isEmpty || followUps.isEmpty
            ? [] : store.apply(followUps, atomic: false, maxObjects: limits.maxObjectsPerScope).accepted
        var trimmed = outcome.replies
        if !edits.isEmpty { edits.settle(&trimmed, store: store, recent: &recentCollections) }
        let replies = trimmed
        if let metrics, origin != nil {
            let rejected = replies.reduce(0) { $0 + ($1.error == nil ? 0 : 1) }
            metrics.changeSetApplied(accepted: replies.count - rejected, rejected: rejected, repeated: outcome.repeated)
        }
        guard !outcome.accepted.isEmpty else {
            let repeated = outcome.repeated
            return .unchanged { answer { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: replyTo, fragmentReplies: replies,
                                                                                repeated: repeated))) } }
        }
        forgetState()
        let broadcast = received.map { CanonicalDate.asReceived(outcome.accepted, received: $0) } ?? outcome.accepted
        let logged = edits.compacted(outcome.accepted)
        let originIndex = origin.flatMap { subscribers[ObjectIdentifier($0)]?.scopeIndex }
        let everyone = Array(subscribers.values)
        let others = origin.map { origin in everyone.filter { $0.outbox !== origin } } ?? everyone  // no dictionary rebuilt (and rehashed) per change set
        // Whole arrays for original clients; collections as edits of the values the scope had before
        // (what every subscriber holds, in broadcast order) for those that asked (§8.24). Each text is
        // made only when someone receives it.
        let serialized = { (fragments: [SyncFragment]) in String(decoding: SyncFragment.serialized(fragments), as: UTF8.self) }
        let wholeText = others.contains { !$0.outbox.receivesCollectionEdits } ? serialized(broadcast) : ""
        let editText = others.contains { $0.outbox.receivesCollectionEdits } ? serialized(edits.compacted(broadcast)) : ""
        let followText = followed.isEmpty ? nil : serialized(followed)
        // Deleted objects the change set brought back: the sender gets their last state before its
        // reply (the others have them at the end of the broadcast).
        let revivedText = outcome.revived.isEmpty ? nil : serialized(outcome.revived)
        let author = origin?.origin
        metrics?.fannedOut(others.count + (followText == nil ? 0 : everyone.count))
        return .accepted(logged: logged + followed) {
            for subscriber in others {
                let scopeIndex = subscriber.scopeIndex
                let told = subscriber.outbox.receivesOrigins ? author : nil
                let text = subscriber.outbox.receivesCollectionEdits ? editText : wholeText
                subscriber.outbox.enqueue { .broadcast(index: $0, scopeIndex: scopeIndex, fragments: text, origin: told) }
            }
            if let followText {
                for subscriber in everyone {
                    let scopeIndex = subscriber.scopeIndex
                    let told = subscriber.outbox.receivesOrigins ? author : nil
                    subscriber.outbox.enqueue { .broadcast(index: $0, scopeIndex: scopeIndex, fragments: followText, origin: told) }
                }
            }
            if let revivedText, let origin, let originIndex {
                origin.enqueue { .scopeSync(index: $0, scopeIndex: originIndex, fragments: revivedText) }
            }
            answer { .syncReply(ScopeSyncReply(index: $0, replyTo: replyTo, fragmentReplies: replies)) }
        }
    }
}
