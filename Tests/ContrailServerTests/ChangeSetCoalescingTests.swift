import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Coalescing of pending change sets (``ChangeSetBatch``, issue 30 item 2): a client that comes back
/// with many pending change sets sends them in few messages, and the outcome is the one of sending
/// them one by one: the same server state, the same local state, the same settled states, the same
/// undo, atomic change sets applied whole or not at all. The histories run against another client's
/// concurrent edits of the same collections and values.
@MainActor
@Suite struct ChangeSetCoalescingTests {
    /// What one run ends with, as text that names items by label (both runs make the same items,
    /// with different UUIDs).
    struct Outcome: Equatable {
        var server = ""
        var local = ""
        var states: [ChangeSet.State] = []
        var afterUndo = ""
        var serverAfterUndo = ""
        var undoStates: [ChangeSet.State] = []
    }

    static func text(_ scope: Scope) -> String {
        guard let shelf = scope.root as? Shelf else { return "no shelf" }
        let items = { (list: [Item]) in list.map { "\($0.label)/\($0.count)" }.joined(separator: ",") }
        return "\(shelf.title) \(shelf.step) [\(items(shelf.left))] [\(items(shelf.right))] \(shelf.featured?.label ?? "-")"
    }

    /// A random history of `steps` change sets made while the scope does not sync (appends, inserts,
    /// removals, moves within and between collections, label and count writes, atomic change sets,
    /// undos), and meanwhile another client's edits; then the scope syncs again. Returns the outcome
    /// and how many `ScopeSync` messages the client sent for the history.
    func run(seed: UInt64, steps: Int, coalescing: Bool, appendsOnly: Bool = false) async throws -> (Outcome, messages: Int) {
        ModelRegistry.register(Shelf.self, Item.self)
        let server = try ContrailServer(options: Wire.options())
        let name = "coalesce-\(seed)"
        let scope = Scope(name: name)
        let shelf = Shelf()
        scope.root = shelf
        var options = ClientOptions()
        options.coalescesChangeSets = coalescing
        // The messages are counted: a reply deadline passed under a sanitizer's load would resume
        // the session and resend what was unacknowledged (correctly), and count it twice.
        options.replyTimeout = .seconds(600)
        let counter = SyncCounter()
        let client = try await Client.sync(scope, connector: counter.connector(server.connector()), options: options)
        let session = try #require(client.session)
        scope.modify {
            shelf.left = (0..<6).map { index in
                let item = Item()
                item.label = "i\(index)"
                return item
            }
        }
        #expect(await eventually { session.pendingChangeSets == 0 })
        let otherScope = Scope(name: name)
        otherScope.root = Shelf()
        let other = try await Client.sync(otherScope, connector: server.connector())
        #expect(await eventually { (otherScope.root as? Shelf)?.left.count == 6 })

        // Only the last four change sets stay undo steps (separate); the ones before may coalesce.
        scope.historyLimit = 4
        session.setMode(.syncOff, for: scope)
        var random = SplitMix64(seed: seed)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(max(count, 1))) }
        var made: [ChangeSet] = []
        var created = 6
        func newItem() -> Item {
            let item = Item()
            item.label = "i\(created)"
            created += 1
            return item
        }
        for step in 0..<steps {
            var changeSet: ChangeSet?
            switch appendsOnly ? random.next() % 2 : random.next() % 11 {
            case 0, 1: changeSet = scope.modify { shelf.left.append(newItem()) }
            case 2: changeSet = scope.modify { shelf.right.append(newItem()) }
            case 3: changeSet = scope.modify { shelf.left.insert(newItem(), at: pick(shelf.left.count + 1)) }
            case 4 where !shelf.left.isEmpty: changeSet = scope.modify { shelf.left.remove(at: pick(shelf.left.count)) }
            case 5 where !shelf.left.isEmpty:
                changeSet = scope.modify { shelf.right.append(shelf.left.remove(at: pick(shelf.left.count))) }
            case 6 where shelf.left.count > 1:
                changeSet = scope.modify { shelf.left.insert(shelf.left.remove(at: pick(shelf.left.count)), at: pick(shelf.left.count)) }
            case 7 where !shelf.left.isEmpty:
                let item = shelf.left[pick(shelf.left.count)]
                changeSet = scope.modify { item.label += "'" }
            case 8 where !shelf.right.isEmpty:
                let item = shelf.right[pick(shelf.right.count)]
                changeSet = scope.modifyAtomically { item.count += 1; shelf.step += 1 }
            case 9: changeSet = scope.modify { shelf.title = "t\(step)" }
            default: if scope.canUndo { changeSet = scope.undo() }
            }
            if let changeSet { made.append(changeSet) }
        }
        // Meanwhile, another client edits what the history edits too.
        if let otherShelf = otherScope.root as? Shelf {
            otherScope.modify {
                otherShelf.title = "other"
                otherShelf.left.first?.count = 7
                let item = Item()
                item.label = "other"
                otherShelf.right.append(item)
            }
        }
        #expect(await eventually { other.session?.pendingChangeSets == 0 })
        let sentBefore = counter.syncs
        session.setMode(.realtime, for: scope)
        #expect(await eventually(.seconds(120)) { session.pendingChangeSets == 0 }, "seed \(seed)")
        var outcome = Outcome()
        outcome.local = Self.text(scope)
        outcome.states = made.map(\.state)
        let messages = counter.syncs - sentBefore
        outcome.server = try await Self.fetched(name, from: server)
        // Undo the last three steps: each is a change set of its own, whatever went in one message.
        var undone: [ChangeSet] = []
        for _ in 0..<3 where scope.canUndo {
            if let changeSet = scope.undo() { undone.append(changeSet) }
        }
        #expect(await eventually(.seconds(120)) { session.pendingChangeSets == 0 }, "seed \(seed)")
        outcome.afterUndo = Self.text(scope)
        outcome.undoStates = undone.map(\.state)
        outcome.serverAfterUndo = try await Self.fetched(name, from: server)
        await other.close()
        await client.close()
        await server.stop()
        return (outcome, messages)
    }

    /// The scope as a fresh replica fetches it from `server`.
    static func fetched(_ name: String, from server: ContrailServer) async throws -> String {
        let fresh = Scope(name: name)
        fresh.root = Shelf()
        let client = try await Client.sync(fresh, connector: server.connector())
        let text = text(fresh)
        await client.close()
        return text
    }

    @Test(arguments: 1...30 as ClosedRange<UInt64>)
    func coalescedHistoriesEndAsTheyDoOneByOne(seed: UInt64) async throws {
        let (alone, aloneMessages) = try await run(seed: seed, steps: 40, coalescing: false)
        let (batched, batchedMessages) = try await run(seed: seed, steps: 40, coalescing: true)
        #expect(batched == alone, "seed \(seed)")
        #expect(alone.server == alone.local, "seed \(seed): the uncoalesced run converged")
        // Positive controls: the history went one message per change set alone, in fewer batched.
        #expect(aloneMessages == alone.states.count, "seed \(seed)")
        #expect(batchedMessages < aloneMessages, "seed \(seed): \(batchedMessages) messages for \(aloneMessages) change sets")
    }

    /// A batch the server applied but whose reply never came back, then the app restarts from its
    /// fragment log: its change sets go again as the same message under the same id, so the server
    /// answers a repeat and the title another client wrote meanwhile stays. Control: the same
    /// restart with the batch id taken out of the restored change sets sends a new message, and the
    /// stale title is written over the other client's.
    @Test(arguments: [true, false])
    func aBatchResentAfterARestartIsAnsweredAsARepeat(keepsBatchID: Bool) async throws {
        let server = try ContrailServer(options: Wire.options())
        let name = "batch-restart"
        let app = try await LoggedShelf(name, server: server)
        defer { app.removeLog() }
        let (scope, shelf, session, replies) = (app.scope, app.shelf, app.session, app.replies)
        session.setMode(.syncOff, for: scope)
        scope.historyLimit = 1  // the last change set stays an undo step; the ones before may coalesce
        scope.modify { shelf.title = "mine" }
        for index in 0..<4 {
            scope.modify {
                let item = Item()
                item.label = "i\(index)"
                shelf.left.append(item)
            }
        }
        scope.modify { shelf.step = 1 }
        replies.dropsReplies = true
        session.setMode(.realtime, for: scope)
        #expect(await eventually { (try? await Self.serverTitle(name, server)) == "mine" })
        // Another client writes the title after the batch was applied.
        let other = try await Self.write(title: "theirs", into: name, on: server)
        let (restored, reopened, pending) = try await app.restart()
        #expect(pending == 6)
        let sent = restored.unsettledRestored.compactMap(\.sentBatch)
        #expect(sent.count == 6 && Set(sent).count == 2, "the batch's members come back with its id, the last one with its own")
        if !keepsBatchID { for changeSet in restored.unsettledRestored { changeSet.sentBatch = nil } }
        let again = try await Client.sync(restored, connector: server.connector())
        #expect(await eventually { again.session?.pendingChangeSets == 0 })
        #expect(try await Self.serverTitle(name, server) == (keepsBatchID ? "theirs" : "mine"))
        try reopened.close()
        await again.close()
        await other.close()
        await server.stop()
    }

    /// A change set sent alone whose reply never came (the app stopped) goes alone again after a
    /// restart from the fragment log, under its own id, even when change sets made after it could
    /// coalesce with it: the server answers it as a repeat, and the title another client wrote
    /// meanwhile stays. Control: the same restart with the send taken out of the restored change
    /// set lets it join a batch under a new id, and its stale title is written over the other's.
    @Test(arguments: [true, false])
    func aChangeSetSentAloneBeforeARestartGoesAloneAgain(keepsSend: Bool) async throws {
        let server = try ContrailServer(options: Wire.options())
        let name = "alone-restart"
        let app = try await LoggedShelf(name, server: server)
        defer { app.removeLog() }
        let (scope, shelf, session, replies) = (app.scope, app.shelf, app.session, app.replies)
        scope.historyLimit = 1  // the last change set stays an undo step; the ones before may coalesce
        replies.dropsReplies = true
        scope.modify { shelf.title = "mine" }
        #expect(await eventually { (try? await Self.serverTitle(name, server)) == "mine" })
        session.setMode(.syncOff, for: scope)
        scope.modify { shelf.step = 1 }
        scope.modify { shelf.step = 2 }
        // Another client writes the title after the lone change set was applied.
        let other = try await Self.write(title: "theirs", into: name, on: server)
        let (restored, reopened, pending) = try await app.restart()
        #expect(pending == 3)
        let lone = try #require(restored.unsettledRestored.first)
        #expect(lone.sentBatch == lone.id && restored.unsettledRestored.dropFirst().allSatisfy { $0.sentBatch == nil })
        if !keepsSend { lone.sentBatch = nil }
        let syncs = SyncCounter()
        let again = try await Client.sync(restored, connector: syncs.connector(server.connector()))
        #expect(await eventually { again.session?.pendingChangeSets == 0 })
        #expect(syncs.syncs == (keepsSend ? 2 : 1), "alone, then the other two as one batch; or all three as one")
        #expect(try await Self.serverTitle(name, server) == (keepsSend ? "theirs" : "mine"))
        #expect(await lone.settled() == .completed)
        try reopened.close()
        await again.close()
        await other.close()
        await server.stop()
    }

    /// Another client of `server` writes `title` into scope `name`; returned once the server has it
    /// (the caller closes it).
    static func write(title: String, into name: String, on server: ContrailServer) async throws -> Client {
        let scope = Scope(name: name)
        scope.root = Shelf()
        let other = try await Client.sync(scope, connector: server.connector())
        scope.modify { (scope.root as? Shelf)?.title = title }
        #expect(await eventually { other.session?.pendingChangeSets == 0 })
        return other
    }

    /// The title the server holds for scope `name`; nil while it holds no such scope (an
    /// `eventually` may ask before the server made it: that is not a failure).
    static func serverTitle(_ name: String, _ server: ContrailServer) async throws -> String? {
        guard let state = await server.state(ofScope: name), let root = state["root"]?.stringValue else { return nil }
        return state["objects"]?[root]?["properties"]?["title"]?.stringValue
    }

    /// Hundreds of appends: one message for those that are no longer undo steps, one for each of the
    /// last four, and the same outcome as one by one.
    @Test func hundredsOfAppendsGoInFewMessages() async throws {
        let (alone, aloneMessages) = try await run(seed: 99, steps: 300, coalescing: false, appendsOnly: true)
        let (batched, batchedMessages) = try await run(seed: 99, steps: 300, coalescing: true, appendsOnly: true)
        #expect(batched == alone)
        #expect(aloneMessages == 300)
        #expect(batchedMessages <= 5, "\(batchedMessages) messages")
    }
}

/// Counts the `ScopeSync` messages a client sends through its ``connector(_:)``s.
final class SyncCounter: Sendable {
    private let count = SanitizerVisibleMutex(0)

    var syncs: Int { count.withLock { $0 } }

    /// `base`, with the `ScopeSync` messages sent through its transports counted here.
    func connector(_ base: any SyncConnector) -> TappedConnector {
        TappedConnector(base: base) { [self] frame, direction in
            let syncs = direction == .sent ? frame.components(separatedBy: "\"type\":\"ScopeSync\"").count - 1 : 0
            if syncs > 0 { count.withLock { $0 += syncs } }
            return true
        }
    }
}

/// Once `dropsReplies` is set, the transports of its ``connector(_:)``s deliver no more frames
/// from the server (the replies to what the client sends then are lost, as when an app dies
/// before they arrive).
final class ReplyGate: Sendable {
    private let dropping = SanitizerVisibleMutex(false)

    var dropsReplies: Bool {
        get { dropping.withLock { $0 } }
        set { dropping.withLock { $0 = newValue } }
    }

    /// `base`, gated.
    func connector(_ base: any SyncConnector) -> TappedConnector {
        TappedConnector(base: base) { [self] _, direction in direction == .sent || !dropsReplies }
    }
}

/// An app's `Shelf` scope with a fragment log in a temporary file, synced with a server through a
/// ``ReplyGate`` (its first sync settled), that can stop before replies arrive and start again.
@MainActor
struct LoggedShelf {
    let name: String
    let url: URL
    let scope: Scope
    let shelf = Shelf()
    let log: FragmentLog
    let replies = ReplyGate()
    let client: Client
    let session: Session

    init(_ name: String, server: ContrailServer) async throws {
        ModelRegistry.register(Shelf.self, Item.self)
        self.name = name
        url = FileManager.default.temporaryDirectory.appending(path: "\(name)-\(UUID().uuidString).log")
        scope = Scope(name: name)
        scope.root = shelf
        log = FragmentLog(url: url)
        try log.attach(to: scope)
        client = try await Client.sync(scope, connector: replies.connector(server.connector()))
        session = try #require(client.session)
        let session = session
        #expect(await eventually { session.pendingChangeSets == 0 })
    }

    /// The app stops (its log closed, its client closed) and starts again from its log: the restored
    /// scope, its reopened log, and how many change sets it restored as pending.
    func restart() async throws -> (Scope, FragmentLog, pending: Int) {
        try log.close()
        await client.close()
        let restored = Scope(name: name)
        let reopened = FragmentLog(url: url)
        let pending = try reopened.attach(to: restored).pendingChangeSets
        return (restored, reopened, pending)
    }

    func removeLog() { try? FileManager.default.removeItem(at: url) }
}
