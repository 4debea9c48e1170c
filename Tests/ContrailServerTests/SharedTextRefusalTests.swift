import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A change set the server refuses (or the client refuses before sending it) that typed into a
/// `SharedText` is taken back: the replica's text ends as the server's, and the replica's later
/// typing is accepted, although each replica numbers its characters without gaps and the server
/// refuses a gap (fuzz `--shared-values` seeds 534 and 9210). The refusal here is an atomic change
/// set that also relabels an item another client removed ("ModelObject not found"), which the
/// refusing replica does not know yet (it is in `pushOnly`).
@MainActor
@Suite struct SharedTextRefusalTests {
    let clock = TestClock()

    typealias Replica = (client: Client, scope: Scope, board: FuzzBoard)

    func makeServer(maxFragments: Int = 10_000) throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.maxFragmentsPerMessage = maxFragments
        options.log = nil
        return try ContrailServer(options: options)
    }

    func makeReplica(_ server: ContrailServer, maxPendingMessages: Int? = nil) async throws -> Replica {
        let scope = Scope(name: "Refusal")
        let board = FuzzBoard()
        scope.root = board
        var options = testOptions(clock: clock)
        if let maxPendingMessages { options.maxPendingMessages = maxPendingMessages }
        let client = try await Client.sync(scope, connector: server.connector(), options: options)
        return (client, scope, board)
    }

    /// The state `changeSet` settles in, waiting (bounded) while ending the client's backoffs (a
    /// refetch retried after a refusal waits on the test clock).
    func settled(_ changeSet: ChangeSet?) async throws -> ChangeSet.State {
        let changeSet = try #require(changeSet)
        #expect(await eventually(.seconds(120)) {
            clock.endPendingBackoff()
            return changeSet.isSettled
        })
        return changeSet.state
    }

    /// The text the server holds, read by a replica that fetches it afresh.
    func serverText(_ server: ContrailServer) async throws -> String {
        let fresh = try await makeReplica(server)
        defer { Task { await fresh.client.close() } }
        return fresh.board.note.text
    }

    /// Whether every replica has sent everything and they all show one text.
    func converged(_ replicas: [Replica]) async -> Bool {
        await eventually(.seconds(90)) {
            clock.endPendingBackoff()
            return replicas.allSatisfy { ($0.client.session?.pendingChangeSets ?? 1) == 0 }
                && Set(replicas.map(\.board.note.text)).count == 1
        }
    }

    /// A and B share "base" and an item; A stops applying remote changes and B removes the item
    /// (unless not `removed`), so an atomic change set of A that relabels it is refused whole.
    func doomedItem(_ server: ContrailServer, maxPendingMessages: Int? = nil, removed: Bool = true) async throws
        -> (a: Replica, b: Replica, item: FuzzItem) {
        let a = try await makeReplica(server, maxPendingMessages: maxPendingMessages)
        let b = try await makeReplica(server)
        let item = FuzzItem()
        #expect(try await settled(a.scope.modify {
            a.board.items.append(item)
            try? a.board.note.insert("base", at: 0)
        }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.count == 1 && b.board.note.text == "base" })
        try #require(a.client.session).setMode(.pushOnly, for: a.scope)
        if removed { #expect(try await settled(b.scope.modify { b.board.items.removeAll() }) == .completed) }
        return (a, b, item)
    }

    /// Waits until every replica has sent everything and shows `text`, as the server does, then
    /// closes them and stops the server.
    func expectEnd(_ replicas: [Replica], server: ContrailServer, text: String) async throws {
        #expect(await converged(replicas))
        #expect(replicas.allSatisfy { $0.board.note.text == text }, "\(replicas.map(\.board.note.text)), expected \(text)")
        #expect(try await serverText(server) == text)
        for replica in replicas { await replica.client.close() }
        await server.stop()
    }

    /// A new item of A's that B removes while A (in `pushOnly`) does not learn it, when a fetch
    /// told A of the last one's removal.
    func doomedItem(_ a: Replica, _ b: Replica) async throws -> FuzzItem {
        let item = FuzzItem()
        #expect(try await settled(a.scope.modify { a.board.items.append(item) }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.contains { $0.uuid == item.uuid } })
        #expect(try await settled(b.scope.modify { b.board.items.removeAll { $0.uuid == item.uuid } }) == .completed)
        return item
    }

    /// The atomic change set types "XYZ" and relabels the item: refused when B removed it, taken
    /// whole otherwise (control). Either way A's text is the server's, and A's next keystroke is
    /// accepted (before the fix it was refused for the gap the refused "XYZ" left).
    @Test(arguments: [true, false])
    func aRefusedAtomicChangeSetTakesItsTypingBackAndLaterTypingIsAccepted(refused: Bool) async throws {
        let server = try makeServer()
        let (a, b, item) = try await doomedItem(server, removed: refused)
        let session = try #require(a.client.session)
        let atomic = a.scope.modifyAtomically {
            try? a.board.note.insert("XYZ", at: 4)
            item.label = "relabelled"
        }
        #expect(try await settled(atomic) == (refused ? .reverted : .completed))
        #expect(a.board.note.text == (refused ? "base" : "baseXYZ"), "the refused typing is gone at once")
        session.setMode(.realtime, for: a.scope)
        let later = a.scope.modify { try? a.board.note.insert("!", at: a.board.note.count) }
        #expect(try await settled(later) == .completed, "the next keystroke is accepted")
        try await expectEnd([a, b], server: server, text: refused ? "base!" : "baseXYZ!")
    }

    /// A refused deletion comes back under its own ids (seed 9210: typed again under new ids, the
    /// server held them beside the characters it never deleted). Control: the same deletion taken.
    @Test(arguments: [true, false])
    func aRefusedDeletionComesBackAsTheCharactersTheServerHolds(refused: Bool) async throws {
        let server = try makeServer()
        let (a, b, item) = try await doomedItem(server)
        let atomic = a.scope.modifyAtomically {
            try? a.board.note.delete(1..<3)
            if refused { item.label = "relabelled" } else { a.board.title = "kept" }
        }
        #expect(try await settled(atomic) == (refused ? .reverted : .completed))
        #expect(a.board.note.text == (refused ? "base" : "be"))
        try #require(a.client.session).setMode(.realtime, for: a.scope)
        #expect(try await settled(a.scope.modify { try? a.board.note.insert("!", at: 0) }) == .completed)
        try await expectEnd([a, b], server: server, text: refused ? "!base" : "!be")
    }

    /// Four pending change sets type into one text and the second is refused. When the third is not
    /// sent yet (one message in flight), it carries the refused characters' ids first and is
    /// accepted; when it is in flight already, the server refuses it for the gap and it is taken
    /// back too, told to the app. Either way A ends as the server, and its later typing is accepted.
    @Test(arguments: [true, false])
    func aRefusedChangeSetBetweenPendingOnesTakesBackOnlyWhatTheServerLacks(oneInFlight: Bool) async throws {
        let server = try makeServer()
        let (a, b, item) = try await doomedItem(server, maxPendingMessages: oneInFlight ? 1 : nil)
        let first = a.scope.modify { try? a.board.note.insert("1", at: 4) }
        let second = a.scope.modifyAtomically {
            try? a.board.note.insert("2", at: 5)
            item.label = "relabelled"
        }
        let third = a.scope.modify { try? a.board.note.insert("3", at: 6) }
        let fourth = a.scope.modify { try? a.board.note.delete(0..<1) }
        #expect(a.board.note.text == "ase123")
        #expect(try await settled(first) == .completed)
        #expect(try await settled(second) == .reverted)
        let thirdState = try await settled(third)
        #expect(thirdState == (oneInFlight ? .completed : .reverted))
        if thirdState == .reverted { #expect(third?.rejection != nil, "the app is told why") }
        #expect(try await settled(fourth) == .completed)
        try #require(a.client.session).setMode(.realtime, for: a.scope)
        #expect(try await settled(a.scope.modify { try? a.board.note.insert("!", at: a.board.note.count) }) == .completed)
        try await expectEnd([a, b], server: server, text: oneInFlight ? "ase13!" : "ase1!")
    }

    /// A change set the client refuses before sending it (more fragments than the server takes)
    /// is taken back the same way, and the change set after it, not yet sent, is accepted.
    /// Control: within the limit, all of it is taken.
    @Test(arguments: [true, false])
    func aChangeSetRefusedBeforeSendingLeavesNoGap(overLimit: Bool) async throws {
        let server = try makeServer(maxFragments: 3)
        let a = try await makeReplica(server)
        let b = try await makeReplica(server)
        #expect(try await settled(a.scope.modify { try? a.board.note.insert("base", at: 0) }) == .completed)
        let big = a.scope.modify {
            try? a.board.note.insert("XY", at: 4)
            for _ in 0..<(overLimit ? 3 : 1) { a.board.items.append(FuzzItem()) }
        }
        let after = a.scope.modify { try? a.board.note.insert("!", at: a.board.note.count) }
        #expect(try await settled(big) == (overLimit ? .reverted : .completed))
        if overLimit {
            guard case .tooManyFragments? = big?.rejection else {
                Issue.record("refused for \(String(describing: big?.rejection))")
                return
            }
        }
        #expect(try await settled(after) == .completed)
        try await expectEnd([a, b], server: server, text: overLimit ? "base!" : "baseXY!")
    }

    /// A refused change set restored from the fragment log after a restart (its edit rebuilt from
    /// its operations) is rolled back as one made in this process. Control: not refused.
    @Test(arguments: [true, false])
    func aRefusedChangeSetRestoredFromTheFragmentLogLeavesNoGap(refused: Bool) async throws {
        let logURL = FileManager.default.temporaryDirectory.appending(path: "contrail-refusal-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: logURL) }
        ModelRegistry.register(FuzzBoard.self, FuzzItem.self, FuzzNote.self)
        let server = try makeServer()
        let b = try await makeReplica(server)
        let item = FuzzItem()
        do {
            let scope = Scope(name: "Refusal")
            let log = FragmentLog(url: logURL)
            try log.attach(to: scope)
            let board = FuzzBoard()
            scope.root = board
            let switchable = SwitchableConnector(server.connector())
            let client = try await Client.sync(scope, connector: switchable, options: testOptions(clock: clock))
            #expect(try await settled(scope.modify {
                board.items.append(item)
                try? board.note.insert("base", at: 0)
            }) == .completed)
            #expect(await eventually(.seconds(30)) { b.board.items.count == 1 && b.board.note.text == "base" })
            try log.compact()  // a snapshot with the root (the file began before the scope had one)
            await switchable.cut()
            if refused { #expect(try await settled(b.scope.modify { b.board.items.removeAll() }) == .completed) }
            _ = scope.modifyAtomically {
                try? board.note.insert("XYZ", at: 2)
                try? board.note.delete(0..<1)
                item.label = "relabelled"
            }
            await ChangeDelivery.main.drain()
            try log.close()
            await client.close()
        }
        let scope = Scope(name: "Refusal")
        let log = FragmentLog(url: logURL)
        try log.attach(to: scope)
        let board = try #require(scope.root as? FuzzBoard)
        #expect(board.note.text == "aXYZse", "the log restored the pending edit")
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions(clock: clock))
        let a: Replica = (client, scope, board)
        #expect(await eventually(.seconds(60)) { (client.session?.pendingChangeSets ?? 1) == 0 })
        #expect(board.note.text == (refused ? "base" : "aXYZse"))
        #expect(try await settled(scope.modify { try? board.note.insert("!", at: board.note.count) }) == .completed)
        try log.close()
        try await expectEnd([a, b], server: server, text: refused ? "base!" : "aXYZse!")
    }

    /// Random histories: A types, deletes and undoes while B types too, and some of A's change
    /// sets are atomic ones the server refuses; A sends one message at a time or many. After
    /// settling, A's text is the server's (and B's), and A's next keystroke is accepted. Control:
    /// every refused change set ended reverted, and each run refused at least one.
    @Test(arguments: 0..<32)
    func randomHistoriesWithRefusalsEndAsTheServer(seed: Int) async throws {
        var random = SplitMix64(seed: UInt64(seed) &+ 0x5EED)
        let server = try makeServer()
        let (a, b, first) = try await doomedItem(server, maxPendingMessages: seed % 2 == 0 ? 1 : nil)
        var item = first
        var refusedSets: [ChangeSet] = []
        var all: [ChangeSet] = []
        for step in 0..<24 {
            let letters = String((0..<Int(random.next() % 3 + 1)).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 26))) })
            let count = a.board.note.count
            let at = Int(random.next() % UInt64(count + 1))
            switch random.next() % 6 {
            case 0:
                if !a.board.items.contains(where: { $0 === item }) { item = try await doomedItem(a, b) }
                if let set = a.scope.modifyAtomically(message: "refused", {
                    try? a.board.note.insert(letters, at: at)
                    if count > 2 { try? a.board.note.delete(0..<1) }
                    item.label = "step \(step)"
                }) {
                    refusedSets.append(set)
                }
            case 1 where count > 0:
                let start = Int(random.next() % UInt64(count))
                if let set = a.scope.modify({ try? a.board.note.delete(start..<min(count, start + 2)) }) { all.append(set) }
            case 2:
                if let set = a.scope.undo() { all.append(set) }
            default:
                if let set = a.scope.modify({ try? a.board.note.insert(letters, at: at) }) { all.append(set) }
            }
            if random.next() % 4 == 0 {
                let other = b.board.note.count
                _ = b.scope.modify { try? b.board.note.insert("B", at: Int(random.next() % UInt64(other + 1))) }
            }
            if random.next() % 3 == 0 { await ChangeDelivery.main.drain() }
        }
        if !a.board.items.contains(where: { $0 === item }) { item = try await doomedItem(a, b) }
        if refusedSets.isEmpty, let set = a.scope.modifyAtomically({
            try? a.board.note.insert("q", at: 0)
            item.label = "last"
        }) {
            refusedSets.append(set)
        }
        for set in refusedSets { #expect(try await settled(set) == .reverted) }
        for set in all { #expect(try await settled(set) != .syncing) }
        try #require(a.client.session).setMode(.realtime, for: a.scope)
        #expect(await converged([a, b]), "seed \(seed): A \(a.board.note.text), B \(b.board.note.text)")
        let held = try await serverText(server)
        #expect(held == a.board.note.text, "seed \(seed): server \(held), A \(a.board.note.text), B \(b.board.note.text)")
        let later = a.scope.modify { try? a.board.note.insert("Z", at: 0) }
        #expect(try await settled(later) == .completed, "seed \(seed): the next keystroke is accepted")
        #expect(await converged([a, b]))
        #expect(a.board.note.text.hasPrefix("Z") && b.board.note.text == a.board.note.text)
        await a.client.close(); await b.client.close(); await server.stop()
    }
}
