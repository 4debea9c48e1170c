import Contrail
import Foundation

/// A property-based convergence check: clients of one scope make random edits (inserts, moves within
/// and between collections, removals, nested objects, references, atomic change sets), switch sync
/// modes, pause, drop their connections, undo and redo, while the server restarts; then everyone
/// comes back online and the run checks that
/// - nothing is pending and every client is online,
/// - every replica equals the server's state and a fresh fetch,
/// - every insert the server acknowledged is there, unless an edit unlinked it (or its item, and the
///   item is gone: an item that came back brings its notes back), or it was held only by a single reference (`pinned`, `link`) that another change set wrote too.
///
/// ```swift
/// let fuzzer = ConvergenceFuzzer(server: .inMemory)
/// if let failure = await fuzzer.run(seed: 42) { print(failure) }
/// ```
@MainActor
package final class ConvergenceFuzzer {
    static let scopeName = "FuzzBoard"

    /// Where the server runs.
    package enum Server: Sendable {
        case inMemory
        case webSocket
        /// `contrail serve` in a child process at this path; restarts SIGKILL it.
        case childProcess(executable: String)
    }

    /// A failing run: its seed, the operations that fail (shrunk when asked), and why.
    package struct Counterexample: Sendable, CustomStringConvertible {
        package let seed: UInt64
        package let clients: Int
        package let operations: [FuzzOperation]
        package let failure: FuzzFailure

        package var description: String {
            let replay = (try? JSONEncoder().encode(Replay(clients: clients, operations: operations)))
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
            return "seed \(seed), \(clients) clients, \(operations.count) steps: \(failure)\n"
                + operations.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
                + "\n  replay: \(replay)"
        }
    }

    /// A run that `contrail fuzz convergence --replay FILE` replays.
    package struct Replay: Codable, Sendable {
        package var clients: Int
        package var operations: [FuzzOperation]
    }

    let server: Server
    /// How long everyone may take to settle at the end of a run.
    package var settleTimeout: Duration = .seconds(20)
    /// Steps per run.
    package var steps: ClosedRange<Int> = 20...80
    /// Whether runs restart the server.
    package var restarts = true
    /// Called with each replica's scope before it first connects (a test opens live queries on it).
    package var replicaOpened: (@MainActor (Scope) -> Void)?
    /// Whether the replicas stand for two versions of the app: every second one does not know
    /// `FuzzSticker` (it keeps the stickers the others insert as unknown objects, Protocol §8.23).
    package var mixedVersions = false
    /// Whether half the edits are of the board's shared text (`note`: typing and deleting) and
    /// counter (`likes`), whose concurrent edits all merge (Protocol §8.21); the check then also
    /// asks that the total be the sum of every acknowledged delta.
    package var sharedValues = false
    /// The text of the first replica's `board.note` at the end of the last run.
    package private(set) var lastBoardNote = ""

    package init(server: Server) {
        self.server = server
    }

    /// Runs the operations `seed` makes; nil when the run converged.
    package func run(seed: UInt64) async -> Counterexample? {
        let (clients, operations) = plan(seed: seed)
        TracingTransport.discardKept()
        guard let failure = await run(operations, clients: clients) else { return nil }
        if TracingTransport.keepsForFailures {
            TracingTransport.writeKept(to: FileManager.default.temporaryDirectory.appending(path: "contrail-fuzz-\(seed).trace").path)
        }
        return Counterexample(seed: seed, clients: clients, operations: operations, failure: failure)
    }

    /// The clients and operations of `seed`.
    package func plan(seed: UInt64) -> (clients: Int, operations: [FuzzOperation]) {
        var random = SplitMix64(seed: seed)
        let clients = Int.random(in: 2...5, using: &random)
        let count = Int.random(in: steps, using: &random)
        return (clients, FuzzOperation.randomRun(clients: clients, count: count, restarts: restarts, shared: sharedValues, using: &random))
    }

    /// Reduces a failing run to a short list of operations that still fails (each candidate is tried
    /// twice, since thread timing is not part of the seed), within `budget` replays.
    package func shrink(_ example: Counterexample, budget: Int = 150) async -> Counterexample {
        var operations = example.operations
        var failure = example.failure
        var replays = 0
        var chunk = max(1, operations.count / 2)
        while chunk >= 1, replays < budget {
            var start = 0
            var reduced = false
            while start < operations.count, replays < budget {
                var candidate = operations
                candidate.removeSubrange(start..<min(start + chunk, candidate.count))
                var found: FuzzFailure?
                for _ in 0..<4 where found == nil {
                    replays += 1
                    found = await run(candidate, clients: example.clients)
                }
                if let found, found.kind == example.failure.kind {
                    operations = candidate
                    failure = found
                    reduced = true
                } else {
                    start += chunk
                }
            }
            if !reduced { chunk /= 2 }
        }
        return Counterexample(seed: example.seed, clients: example.clients, operations: operations, failure: failure)
    }

    // MARK: - One run

    /// Replays `operations` with `clients` clients; nil when everything converged.
    package func run(_ operations: [FuzzOperation], clients count: Int) async -> FuzzFailure? {
        ModelRegistry.register(FuzzBoard.self, FuzzSticker.self)
        let host = FuzzServerHost(kind: hostKind)
        var replicas: [FuzzReplica] = []
        let failure = await run(operations, clients: count, host: host, replicas: &replicas)
        lastBoardNote = replicas.first?.board.note.text ?? ""
        for replica in replicas { await replica.client.close() }
        await host.shutDown()
        return failure
    }

    private func run(_ operations: [FuzzOperation], clients count: Int, host: FuzzServerHost,
                     replicas: inout [FuzzReplica]) async -> FuzzFailure? {
        do {
            let target = try await host.start()
            for index in 0..<count {
                // Odd replicas send whole collections with their bases, even ones edits (§8.24).
                var options = Self.clientOptions
                options.sendsCollectionEdits = index % 2 == 0
                let replica = FuzzReplica(index: index, connector: FuzzConnector(target, name: "c\(index)"), options: options)
                if mixedVersions, index % 2 == 1 { replica.scope.unknownClassNames = [FuzzSticker.className] }
                replicas.append(replica)
                replicaOpened?(replica.scope)
                let session = try await replica.client.connect()
                try await session.fetch(replica.scope)
            }
        } catch {
            return FuzzFailure(kind: .setup, details: "\(error)")
        }
        var removed = Set<UUID>()
        var parents: [UUID: UUID] = [:]
        holders = [:]
        for operation in operations {
            if TracingTransport.isEnabled { TracingTransport.trace("step: \(operation)") }
            do {
                try await perform(operation, replicas: replicas, host: host, removed: &removed, parents: &parents)
            } catch {
                return FuzzFailure(kind: .setup, details: "restart failed: \(error)")
            }
        }
        return await check(replicas, host: host, removed: removed, parents: parents)
    }

    private var hostKind: FuzzServerHost.Kind {
        switch server {
        case .inMemory: return .inMemory
        case .webSocket: return .webSocket
        case .childProcess(let executable): return .childProcess(executable: executable)
        }
    }

    static var clientOptions: ClientOptions {
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(1), maximum: .milliseconds(20), jitter: 0.5)
        options.replyTimeout = .seconds(10)
        options.connectTimeout = .seconds(10)
        options.pingInterval = .seconds(5)
        return options
    }

    private func perform(_ operation: FuzzOperation, replicas: [FuzzReplica], host: FuzzServerHost,
                         removed: inout Set<UUID>, parents: inout [UUID: UUID]) async throws {
        func replica(_ client: Int) -> FuzzReplica { replicas[client % replicas.count] }
        switch operation {
        case .edit(let client, let edit):
            let replica = replica(client)
            let before = replica.links()
            apply(edit, to: replica, parents: &parents)
            track(before, replica.links(), of: replica, removed: &removed)
        case .atomic(let client, let edits):
            let replica = replica(client)
            let before = replica.links()
            replica.scope.modifyAtomically {
                for edit in edits { apply(edit, to: replica, parents: &parents) }
            }
            track(before, replica.links(), of: replica, removed: &removed)
        case .mode(let client, let mode):
            let replica = replica(client)
            let modes: [SyncMode] = [.realtime, .pushOnly, .syncOff, .manual]
            replica.session?.setMode(modes[mode % 4], for: replica.scope)
        case .syncNow(let client):
            let replica = replica(client)
            if let session = replica.session {
                Task { try? await session.sync(replica.scope) }
            }
        case .pause(let client):
            let replica = replica(client)
            replica.pauses += 1
            replica.session?.pauseIncoming()
        case .resume(let client):
            let replica = replica(client)
            replica.resumeAll()
        case .drop(let client):
            await replica(client).connector.cut()
        case .reconnect(let client):
            replica(client).connector.restore()
        case .undo(let client), .redo(let client):
            let replica = replica(client)
            let before = replica.links()
            if case .undo = operation { replica.scope.undo() } else { replica.scope.redo() }
            track(before, replica.links(), of: replica, removed: &removed)
        case .restartServer:
            let target = try await host.restart()
            for replica in replicas { replica.connector.route(to: target) }
        case .drain:
            await ChangeDelivery.main.drain()
        case .yield:
            await Task.yield()
        }
    }

    /// The objects each object was seen held by (in the editing replica's view, before and after
    /// each local edit); the board's UUID stands for the root.
    private var holders: [UUID: Set<UUID>] = [:]

    /// Records what an edit of `replica` unlinked (into `removed`) and who held what.
    private func track(_ before: Set<FuzzLink>, _ after: Set<FuzzLink>, of replica: FuzzReplica, removed: inout Set<UUID>) {
        removed.formUnion(FuzzReplica.unlinked(before: before, after: after, root: replica.board.uuid))
        for link in before.union(after) { holders[link.child, default: []].insert(link.parent) }
    }

    /// Whether `uuid` hung only on objects (never directly on the board) of which one is gone: it
    /// left with its holder (a `link` target whose item was removed, say), not by itself.
    private func leftWithItsHolder(_ uuid: UUID, root: UUID, present: Set<UUID>) -> Bool {
        let held = holders[uuid] ?? []
        return !held.contains(root) && held.contains { !present.contains($0) }
    }

    private func apply(_ edit: FuzzOperation.Edit, to replica: FuzzReplica, parents: inout [UUID: UUID]) {
        let board = replica.board
        switch edit {
        case .setTitle(let value):
            board.title = "t\(value)"
        case .addScore(let value):
            board.score += value
        case .insert(let list, let at, let label):
            let sticker = mixedVersions && label % 3 == 0 && replica.scope.unknownClassNames.isEmpty
            let item = sticker ? FuzzSticker() : FuzzItem()
            item.label = "l\(label)"
            var items = replica.list(list)
            items.insert(item, at: at % (items.count + 1))
            replica.setList(list, items)
        case .remove(let list, let at):
            var items = replica.list(list)
            guard !items.isEmpty else { return }
            items.remove(at: at % items.count)
            replica.setList(list, items)
        case .moveWithin(let list, let from, let to):
            var items = replica.list(list)
            guard items.count > 1 else { return }
            let item = items.remove(at: from % items.count)
            items.insert(item, at: to % (items.count + 1))
            replica.setList(list, items)
        case .moveBetween(let list, let from, let to):
            var source = replica.list(list)
            guard !source.isEmpty else { return }
            let item = source.remove(at: from % source.count)
            replica.setList(list, source)
            var target = replica.list(list + 1)
            target.removeAll { $0 === item }
            target.insert(item, at: to % (target.count + 1))
            replica.setList(list + 1, target)
        case .vote(let list, let at):
            replica.item(list, at)?.votes += 1
        case .relabel(let list, let at, let label):
            replica.item(list, at)?.label = "r\(label)"
        case .addNote(let list, let at, let text):
            guard let item = replica.item(list, at) else { return }
            let note = FuzzNote()
            note.text = "n\(text)"
            parents[note.uuid] = item.uuid
            item.notes.append(note)
        case .removeNote(let list, let at):
            guard let item = replica.item(list, at), !item.notes.isEmpty else { return }
            item.notes.removeFirst()
        case .pin(let list, let at):
            board.pinned = replica.item(list, at)
        case .unpin:
            board.pinned = nil
        case .link(let list, let at, let target):
            guard let item = replica.item(list, at) else { return }
            item.link = replica.item(list + 1, target) ?? replica.item(list, target)
        case .typeText(let at, let text):
            try? board.note.insert(FuzzOperation.Edit.letters(text), at: at % (board.note.count + 1))
        case .deleteText(let at, let count):
            guard board.note.count > 0 else { return }
            let start = at % board.note.count
            try? board.note.delete(start..<min(board.note.count, start + count))
        case .addLikes(let delta):
            board.likes.add(Int64(delta))
        }
    }

    // MARK: - Checks

    /// How the local change sets of every converged run settled, by state (`drops`: the
    /// elements of partially reverted change sets that the server's merge left out), for the
    /// campaign's summary; with `mixedVersions`, also the objects of unknown classes the replicas
    /// that lack `FuzzSticker` held at the end (`unknown objects kept`).
    package private(set) var settlements: [String: Int] = [:]

    /// Counts how the replicas' local change sets settled; a change set with drops that is not
    /// partially reverted is a failure (it would tell the app a dropped move happened).
    private func countSettlements(_ replicas: [FuzzReplica]) -> FuzzFailure? {
        for replica in replicas where !replica.scope.unknownClassNames.isEmpty {
            settlements["unknown objects kept", default: 0] += replica.scope.unknownObjects.count
        }
        for replica in replicas {
            for changeSet in replica.scope.history where changeSet.origin == .local {
                settlements[changeSet.state.rawValue, default: 0] += 1
                settlements["drops", default: 0] += changeSet.drops.count
                if !changeSet.drops.isEmpty && changeSet.state != .partiallyReverted {
                    return FuzzFailure(kind: .divergent, details: "c\(replica.index): a change set with drops \(changeSet.drops) settled \(changeSet.state)")
                }
            }
        }
        return nil
    }

    private func check(_ replicas: [FuzzReplica], host: FuzzServerHost, removed: Set<UUID>, parents: [UUID: UUID]) async -> FuzzFailure? {
        for replica in replicas {
            replica.connector.restore()
            replica.resumeAll()
            replica.session?.setMode(.realtime, for: replica.scope)
        }
        let settled = await eventually(settleTimeout) {
            replicas.allSatisfy { $0.client.status == .online && $0.session?.pendingChangeSets == 0 }
                && Set(replicas.map { self.state(of: $0) }).count == 1
        }
        if !settled {
            let stuck = replicas.filter { $0.client.status != .online || $0.session?.pendingChangeSets != 0 }
            if !stuck.isEmpty {
                return FuzzFailure(kind: .stuck, details: stuck.map {
                    "c\($0.index) \($0.client.status) pending \($0.session?.pendingChangeSets ?? -1)"
                }.joined(separator: ", "))
            }
        }
        let reference: JSON
        switch await freshState(host: host) {
        case .success(let state): reference = state
        case .failure(let error): return FuzzFailure(kind: .divergent, details: "a fresh fetch failed: \(error)")
        }
        // The server stores what was sent; a replica also shows defaults for what never was.
        if var server = await host.state(ofScope: Self.scopeName) {
            if mixedVersions { server = StateDifference.withoutNulls(server) }
            if let difference = StateDifference.serverMismatch(server, reference) {
                return FuzzFailure(kind: .divergent, details: "a fresh fetch differs from the server:\n" + difference)
            }
        }
        let divergent = replicas.filter { state(of: $0) != reference }
        if TracingTransport.isEnabled {
            TracingTransport.trace("fresh fetch: \(reference)")
            for replica in replicas {
                for changeSet in replica.scope.history {
                    TracingTransport.trace("c\(replica.index) history \(changeSet.origin) \(changeSet.state) \(changeSet.message ?? ""): \(JSON.array(changeSet.fragments.map(\.json)))")
                }
            }
        }
        if !divergent.isEmpty {
            return FuzzFailure(kind: .divergent, details: divergent.map { replica in
                "c\(replica.index) differs from a fresh fetch:\n" + StateDifference.describe(state(of: replica), reference)
            }.joined(separator: "\n"))
        }
        let present = Set((reference["objects"]?.objectValue ?? [:]).keys.compactMap { UUID(uuidString: $0) })
        // A single reference is last-write-wins: another client's concurrent write to the same key
        // (made without knowing the insert) replaces it, and then the insert is rightly gone.
        let referenceWrites = replicas.flatMap(\.referenceWrites)
        func displaced(_ uuid: UUID, addedBy changeSet: ChangeSet) -> Bool {
            let holders = changeSet.fragments.flatMap { fragment in
                FuzzLink.singleReferences.filter { fragment.properties[$0]?.stringValue.flatMap(UUID.init(uuidString:)) == uuid }
                    .map { FuzzLink.Key(parent: fragment.uuid, property: $0) }
            }
            return holders.contains { key in referenceWrites.contains { $0.key == key && $0.changeSet !== changeSet } }
        }
        for replica in replicas {
            for (uuid, changeSet) in replica.adds where changeSet.state == .completed && !present.contains(uuid) {
                // An item that was removed and is gone takes its notes with it; one that came back
                // (an undo, a move that won over the removal) brings them back too.
                if removed.contains(uuid) { continue }
                if let parent = parents[uuid], removed.contains(parent), !present.contains(parent) { continue }
                if let root = replicas.first?.board.uuid, leftWithItsHolder(uuid, root: root, present: present) { continue }
                if displaced(uuid, addedBy: changeSet) { continue }
                return FuzzFailure(kind: .lostInsert, details: "c\(replica.index)'s acknowledged insert \(uuid.uuidString.lowercased()) is gone, and no edit removed it")
            }
        }
        if sharedValues, let failure = checkLikes(replicas, reference: reference) { return failure }
        return countSettlements(replicas)
    }

    /// The board's `likes` is the sum of the deltas of every local change set the server applied
    /// (none is lost to a concurrent one); skipped when one was partly reverted (its delta may or
    /// may not have counted).
    private func checkLikes(_ replicas: [FuzzReplica], reference: JSON) -> FuzzFailure? {
        var sum: Int64 = 0
        for replica in replicas {
            for changeSet in replica.scope.history where changeSet.origin == .local {
                let delta = changeSet.fragments.reduce(Int64(0)) { $0 + ($1.counterDeltas?["likes"] ?? 0) }
                guard delta != 0 else { continue }
                switch changeSet.state {
                case .completed: sum += delta
                case .reverted: break
                case .partiallyReverted, .syncing: return nil
                }
            }
        }
        guard let root = replicas.first?.board.uuid.uuidString.lowercased() else { return nil }
        let total = reference["objects"]?[root]?["properties"]?["likes"]?.int64Value ?? 0
        guard total != sum else { return nil }
        return FuzzFailure(kind: .divergent, details: "likes is \(total), but the acknowledged deltas add up to \(sum)")
    }

    /// A replica's state, compared with the others'. With mixed versions, without null values: a
    /// full state leaves out a null reference (Protocol §3.4), so a replica that keeps an object it
    /// does not know has no key where one that knows its class shows `null`.
    private func state(of replica: FuzzReplica) -> JSON {
        let state = replica.scope.stateJSON()
        return mixedVersions ? StateDifference.withoutNulls(state) : state
    }

    /// What a new client fetches.
    private func freshState(host: FuzzServerHost) async -> Result<JSON, SyncError> {
        guard let target = host.connector else { return .failure(.closed) }
        // The checker is no participant: its connect and fetch get a minute (a participant's 10 s
        // are part of the run, where a paused client's overdue reply makes it reconnect), so that
        // a loaded machine does not turn a slow final fetch into a divergence.
        var options = Self.clientOptions
        options.replyTimeout = .seconds(60)
        options.connectTimeout = .seconds(60)
        let replica = FuzzReplica(index: -1, connector: FuzzConnector(target, name: "fresh"), options: options)
        let state: Result<JSON, SyncError>
        do {
            let session = try await replica.client.connect()
            try await session.fetch(replica.scope)
            state = .success(self.state(of: replica))
        } catch {
            state = .failure(error)
        }
        await replica.client.close()
        return state
    }
}

/// Waits (bounded) until `condition` holds, letting the main actor run in between.
@MainActor
func eventually(_ timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        await ChangeDelivery.main.drain()
        if condition() { return true }
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
}
