import Contrail
import Foundation

/// One scope on the server: an actor holding its schema-agnostic state, the sessions subscribed to
/// it, and its log. Change sets are applied one at a time in arrival order (one total order per
/// scope); broadcasts go straight into the subscribers' outboxes, so every session sees them in
/// that order.
actor ServerScope {
    /// A session subscribed to this scope.
    private struct Subscriber {
        let outbox: SessionOutbox
        let scopeIndex: Int
    }

    /// The scope's name.
    let name: String
    private let limits: ServerLimits
    private let dataDirectory: URL?
    private let fsync: FsyncPolicy
    private let log: ServerLog
    private var store: ScopeStore?
    private var persistence: ScopePersistence?
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]
    /// The `fragments` text of the current full state, until the next change.
    private var cachedState: String?
    /// Set by ``close()``: the scope no longer loads or accepts anything.
    private var isClosed = false

    init(name: String, limits: ServerLimits, dataDirectory: URL?, fsync: FsyncPolicy, log: ServerLog) {
        self.name = name
        self.limits = limits
        self.dataDirectory = dataDirectory
        self.fsync = fsync
        self.log = log
    }

    /// The store, loaded from the data directory on first use.
    private func loadedStore() throws(ServerError) -> ScopeStore {
        if let store { return store }
        if isClosed { throw ServerError.stopped }
        if let dataDirectory {
            let (persistence, restored) = try ScopePersistence.open(directory: dataDirectory, name: name, fsync: fsync)
            self.persistence = persistence
            store = restored
            log.write("scope '\(name)': loaded \(restored.objectCount) objects")
            return restored
        }
        let fresh = ScopeStore()
        store = fresh
        return fresh
    }

    /// Subscribes a session (once, however often it fetches) and queues `ScopeFetchReply` then
    /// `ScopeState` into its outbox, with no broadcast in between.
    func fetch(outbox: SessionOutbox, scopeIndex: Int, replyTo: Int) {
        let store: ScopeStore
        do {
            store = try loadedStore()
        } catch {
            log.write("scope '\(name)': \(error)")
            outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo, error: WireErrorBody(message: "Scope could not be loaded")))) }
            return
        }
        subscribers[ObjectIdentifier(outbox)] = Subscriber(outbox: outbox, scopeIndex: scopeIndex)
        let fragments = cachedState ?? String(decoding: SyncFragment.serialized(store.stateFragments()), as: UTF8.self)
        cachedState = fragments
        let root = store.rootUUID.wireString
        outbox.enqueue { .message(.scopeFetchReply(ScopeFetchReply(index: $0, replyTo: replyTo, scopeIndex: scopeIndex))) }
        outbox.enqueue { .scopeState(index: $0, scopeIndex: scopeIndex, rootUUID: root, fragments: fragments) }
    }

    /// Applies one `ScopeSync` from the session owning `outbox`: persists what was accepted,
    /// broadcasts it to every other subscribed session, then queues the reply.
    func sync(_ message: ScopeSync, from outbox: SessionOutbox) {
        guard var store = try? loadedStore() else {
            reply(outbox, message, all: WireErrorBody.couldNotApplySyncMessage("scope could not be loaded"))
            return
        }
        self.store = nil  // keep the store uniquely referenced while it is mutated
        let outcome = store.apply(message.fragments, atomic: message.atomic == true, maxObjects: limits.maxObjectsPerScope,
                                  changeSetID: message.changeSetID)
        if !outcome.accepted.isEmpty, let persistence {
            do {
                try persistence.append(outcome.accepted, changeSetID: message.changeSetID)
                try persistence.compactIfNeeded(store)
            } catch {
                // Nothing was broadcast or acknowledged: drop the memory state, reload from disk.
                log.write("scope '\(name)': \(error)")
                persistence.close()
                self.persistence = nil
                cachedState = nil
                reply(outbox, message, all: WireErrorBody.couldNotApplySyncMessage("storage failed"))
                return
            }
        }
        self.store = store
        if !outcome.accepted.isEmpty {
            cachedState = nil
            broadcast(outcome.accepted, except: outbox)
        }
        outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: message.index, fragmentReplies: outcome.replies))) }
    }

    private func reply(_ outbox: SessionOutbox, _ message: ScopeSync, all error: WireErrorBody) {
        let replies = Array(repeating: FragmentReply.rejected(error), count: message.fragments.count)
        outbox.enqueue { .message(.scopeSyncReply(ScopeSyncReply(index: $0, replyTo: message.index, fragmentReplies: replies))) }
    }

    /// Sends accepted fragments to every subscriber but the originator: encoded once, the same
    /// fragment text for all.
    private func broadcast(_ fragments: [SyncFragment], except origin: SessionOutbox) {
        guard subscribers.count > 1 || subscribers[ObjectIdentifier(origin)] == nil else { return }
        let text = String(decoding: SyncFragment.serialized(fragments), as: UTF8.self)
        let originID = ObjectIdentifier(origin)
        for (id, subscriber) in subscribers where id != originID {
            let scopeIndex = subscriber.scopeIndex
            subscriber.outbox.enqueue { .scopeSync(index: $0, scopeIndex: scopeIndex, fragments: text) }
        }
    }

    /// Removes a session's subscription (expiry).
    func unsubscribe(_ outbox: SessionOutbox) {
        subscribers[ObjectIdentifier(outbox)] = nil
    }

    /// The state as `Scope.stateJSON()` shapes it; nil if it cannot be loaded.
    func stateJSON() -> JSON? {
        (try? loadedStore())?.stateJSON()
    }

    /// The number of subscribed sessions.
    var subscriberCount: Int { subscribers.count }

    /// Writes out and closes the log.
    func close() {
        isClosed = true
        if let persistence, let store { try? persistence.compact(store) }
        persistence?.close()
        persistence = nil
        store = nil
        subscribers = [:]
    }
}
