@testable import Contrail
@testable import ContrailWire
@testable import ContrailServer
import ContrailFuzz
import Foundation
import Testing

/// The convergence promise: the merge's rules, each failure class the fuzzer found (shrunk to a
/// few steps), and a fuzz campaign over every operation kind.
@MainActor
@Suite("Convergence")
struct ConvergenceTests {
    // MARK: - The merge's rules

    @Test func anElementTheOtherSideRemovedStaysRemoved() {
        let (x, y) = (UUID(), UUID())
        #expect(CollectionMerge.merge(base: [x], new: [x, y], current: []) == [y])
        // A move does not bring it back either.
        let z = UUID()
        #expect(CollectionMerge.merge(base: [x, z], new: [z, x], current: [z]) == [z])
        // Positive control: an element the edit inserted is placed even where the other side removed things.
        #expect(CollectionMerge.merge(base: [x], new: [y], current: []) == [y])
    }

    /// 10,000 random three-way merges hold every rule of `CollectionMerge`'s doc comment.
    @Test func randomMergesHoldTheRules() {
        var random = SplitMix64(seed: 15)
        let pool = (0..<8).map { _ in UUID() }
        func randomList() -> [UUID] { Array(pool.shuffled(using: &random).prefix(Int.random(in: 0...6, using: &random))) }
        for _ in 0..<10_000 {
            let base = randomList()
            // Each side is an edit of base: some removed, some inserted, reordered.
            func edit(_ list: [UUID]) -> [UUID] {
                var result = list.filter { _ in Int.random(in: 0..<4, using: &random) != 0 }
                for element in pool where !list.contains(element) && Int.random(in: 0..<5, using: &random) == 0 {
                    result.insert(element, at: Int.random(in: 0...result.count, using: &random))
                }
                if result.count > 1, Bool.random(using: &random) { result.swapAt(0, result.count - 1) }
                return result
            }
            let new = edit(base), current = edit(base)
            let merged = CollectionMerge.merge(base: base, new: new, current: current)
            let context = "base \(base.map(pool.firstIndex)) new \(new.map(pool.firstIndex)) current \(current.map(pool.firstIndex))"
            #expect(Set(merged).count == merged.count, "no duplicates: \(context)")
            for element in pool {
                let (inBase, inNew, inCurrent, inMerged) = (base.contains(element), new.contains(element), current.contains(element), merged.contains(element))
                if inBase && (!inNew || !inCurrent) { #expect(!inMerged, "removed by a side stays removed: \(context)") }
                if !inBase && inNew { #expect(inMerged, "the edit's insert is there: \(context)") }
                if !inBase && inCurrent { #expect(inMerged, "the other side's insert is there: \(context)") }
                if inBase && inNew && inCurrent { #expect(inMerged, "kept by both is there: \(context)") }
            }
        }
    }

    // MARK: - Moves send no add

    @Test func aMoveBetweenCollectionsInOneTurnRecordsOnlyTheParentsChange() async {
        ModelRegistry.register(FuzzBoard.self)
        let scope = Scope(name: "moves")
        let board = FuzzBoard()
        scope.root = board
        let item = FuzzItem()
        board.items.append(item)
        scope.flush()
        item.votes = 3
        board.items.removeAll()
        board.shelf.append(item)
        let changeSet = scope.flush()
        let kinds = changeSet?.fragments.map { "\($0.kind)" }.sorted()
        #expect(kinds == ["change", "change"], "the board's change and the item's own edit; no add")
        #expect(changeSet?.fragments.contains { $0.uuid == item.uuid && $0.properties["votes"] == 3 && $0.kind == .change } == true)
        // Positive control: leaving in one turn and coming back in a later one is a new add.
        board.shelf.removeAll()
        scope.flush()
        board.items.append(item)
        #expect(scope.flush()?.fragments.contains { $0.uuid == item.uuid && $0.kind == .add } == true)
    }

    // MARK: - The server never overwrites with an add

    @Test func anAddOfAnObjectTheServerHoldsKeepsTheServersValues() {
        var store = ScopeStore()
        let root = store.rootUUID
        let card = UUID()
        _ = store.apply([
            SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["votes": 2, "text": "a"]),
            SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["cards": .array([.string(card.wireString)])]),
        ], atomic: false, maxObjects: 100)
        _ = store.apply([SyncFragment(kind: .change, uuid: card, className: "Card", properties: ["votes": 3])], atomic: false, maxObjects: 100)
        let stale = store.apply([SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["votes": 2, "text": "a", "extra": "new"])],
                                atomic: false, maxObjects: 100)
        #expect(stale.replies.first?.isAccepted == true)
        #expect(stale.replies.first?.modifications == ["votes": 3], "the sender learns the server's value")
        #expect(store.objects[card]?.properties["votes"] == 3)
        #expect(store.objects[card]?.properties["extra"] == "new", "what the object lacked is filled in")
        #expect(stale.accepted.map(\.kind) == [.change], "others are sent only what changed, as a change")
    }

    // MARK: - A change set applies once

    @Test func aChangeSetSentTwiceAppliesOnceAndTheAnswerIsTheCurrentState() {
        var store = ScopeStore()
        let root = store.rootUUID
        let id = UUID()
        let card = UUID()
        let insert: [SyncFragment] = [
            SyncFragment(kind: .add, uuid: card, className: "Card", properties: ["votes": 1]),
            SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["cards": .array([.string(card.wireString)])],
                         bases: ["cards": []]),
        ]
        #expect(store.apply(insert, atomic: false, maxObjects: 100, changeSetID: id).accepted.count == 2)
        // Another client removes the card; then the first change set arrives again (a new session).
        _ = store.apply([SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["cards": .array([])],
                                      bases: ["cards": [card]])], atomic: false, maxObjects: 100, changeSetID: UUID())
        let again = store.apply(insert, atomic: false, maxObjects: 100, changeSetID: id)
        #expect(again.accepted.isEmpty, "nothing is applied or broadcast twice")
        #expect(store.objects[card] == nil, "the removal stands")
        // Issue 23: the card the scope no longer holds is answered "not found" (its add may have failed
        // the first time, and the server keeps no per-fragment outcome), never counted as applied.
        #expect(again.replies.map(\.isAccepted) == [false, true])
        #expect(again.replies[1].modifications == ["cards": .array([])], "the sender learns the current value")
        // Positive control: the same fragments under a new id are a new change set.
        #expect(store.apply(insert, atomic: false, maxObjects: 100, changeSetID: UUID()).accepted.count == 2)
        #expect(store.objects[card] != nil)
    }

    @Test func appliedChangeSetIdsSurviveASnapshot() throws {
        var store = ScopeStore()
        let id = UUID()
        _ = store.apply([SyncFragment(kind: .change, uuid: store.rootUUID, className: "Board", properties: ["title": "a"])],
                        atomic: false, maxObjects: 100, changeSetID: id)
        var restored = try #require(ScopeStore(snapshot: store.snapshotJSON(name: "Board")))
        let again = restored.apply([SyncFragment(kind: .change, uuid: store.rootUUID, className: "Board", properties: ["title": "b"])],
                                   atomic: false, maxObjects: 100, changeSetID: id)
        #expect(again.accepted.isEmpty)
        #expect(again.replies.first?.modifications == ["title": "a"])
    }

    // MARK: - Waiting

    @Test func everyWaiterOfAReplyIsWoken() async {
        let waiter = ReplyWaiter<Int>()
        async let first = waiter.wait(timeout: .seconds(30))
        async let second = waiter.wait(timeout: .seconds(30))
        await Task.yield()
        waiter.resolve(.success(7))
        let results = await [first, second].map { try? $0.get() }
        #expect(results == [7, 7])
        // A short deadline ends only its own wait.
        let other = ReplyWaiter<Int>()
        #expect(await other.wait(timeout: .milliseconds(5)) == .failure(.timedOut))
        #expect(!other.isResolved)
    }

    // MARK: - The fuzz campaign

    /// Seeded random runs over the in-memory transport with every operation kind, server restarts
    /// included. None may diverge or lose an insert; one run may fail to settle in time (the suite
    /// shares two cores with everything else), which the campaigns in the README's design section
    /// never saw either. The code before these fixes failed about one seed in five.
    @Test func seededRunsConvergeInMemory() async {
        let fuzzer = ConvergenceFuzzer(server: .inMemory)
        fuzzer.settleTimeout = .seconds(30)
        fuzzer.steps = 20...50
        await Self.campaign(fuzzer, seeds: 1...150, label: "convergence")
    }

    /// Restarts here SIGKILL a `contrail serve` child on the same data directory: what it acknowledged
    /// must come back, and every client must settle with it.
    @Test func seededRunsConvergeWithAChildServerKilledAtRestarts() async throws {
        try await Self.childServerCampaign(seeds: 1...12, sharedValues: false, label: "convergence with a child server")
    }

    /// Seeded runs against a `contrail serve` child that restarts SIGKILL: every run converges and
    /// the seeds kill the server at least once.
    static func childServerCampaign(seeds: ClosedRange<UInt64>, sharedValues: Bool, label: String) async throws {
        let fuzzer = ConvergenceFuzzer(server: .childProcess(executable: try ServerProcess.executable.path(percentEncoded: false)))
        fuzzer.sharedValues = sharedValues
        fuzzer.settleTimeout = .seconds(15)
        fuzzer.steps = 20...40
        var restarts = 0
        await campaign(fuzzer, seeds: seeds, label: label) { seed in
            restarts += fuzzer.plan(seed: seed).operations.filter { $0 == .restartServer }.count
        }
        #expect(restarts > 0, "the seeds kill the server at least once")
    }

    @Test func seededRunsConvergeOverWebSockets() async {
        let fuzzer = ConvergenceFuzzer(server: .webSocket)
        fuzzer.settleTimeout = .seconds(30)
        fuzzer.steps = 20...40
        await Self.campaign(fuzzer, seeds: 1...12, label: "convergence over WebSockets")
    }

    /// Two app versions on one scope: every second replica does not know `FuzzSticker`, which the
    /// others insert into the collections and link and pin. The old replicas keep the stickers
    /// (and the notes under them) as unknown objects, edit the collections around them, and every
    /// replica must still equal a fresh fetch by a replica that knows every class (Protocol §8.23).
    @Test func seededRunsConvergeWithAClassSomeReplicasDoNotKnow() async {
        let fuzzer = ConvergenceFuzzer(server: .inMemory)
        fuzzer.mixedVersions = true
        fuzzer.settleTimeout = .seconds(30)
        fuzzer.steps = 20...50
        var stickers = 0
        await Self.campaign(fuzzer, seeds: 1...100, label: "convergence with mixed versions") { seed in
            let plan = fuzzer.plan(seed: seed)
            guard plan.clients > 1 else { return }
            stickers += plan.operations.filter { operation in
                guard case .edit(let client, .insert(_, _, let label)) = operation else { return false }
                return label % 3 == 0 && client % plan.clients % 2 == 0
            }.count
        }
        #expect(stickers > 20, "the seeds insert stickers the old replicas do not know")
        #expect(fuzzer.settlements["unknown objects kept", default: 0] > 20, "the old replicas ended holding stickers")
    }

    /// Half the edits type into and delete from the board's `SharedText` and add to its
    /// `SharedCounter`, concurrently from 2–5 clients that go offline (sync off, dropped
    /// connections, paused), undo and redo, while the server restarts: every replica must end with
    /// the server's text and total, and the total must be the sum of every acknowledged delta.
    @Test func seededRunsConvergeWithSharedTextAndCounters() async {
        let fuzzer = ConvergenceFuzzer(server: .inMemory)
        fuzzer.sharedValues = true
        fuzzer.settleTimeout = .seconds(30)
        fuzzer.steps = 20...50
        var typed = 0
        var texts = Set<String>()
        await Self.campaign(fuzzer, seeds: 1...60, label: "convergence with shared values") { seed in
            typed += fuzzer.plan(seed: seed).operations.filter { operation in
                if case .edit(_, .typeText) = operation { return true }
                return false
            }.count
        } afterEach: {
            texts.insert(fuzzer.lastBoardNote)
        }
        #expect(typed > 200, "the seeds type into the shared text")
        #expect(texts.filter { $0.count > 5 }.count > 20, "the runs end with texts, not empty ones")
    }

    /// The same with `contrail serve` SIGKILLed at restarts: the text's state comes back from the
    /// server's log (Protocol §8.21's compact encoding).
    @Test func seededRunsWithSharedValuesConvergeWithAChildServerKilledAtRestarts() async throws {
        try await Self.childServerCampaign(seeds: 1...8, sharedValues: true, label: "convergence with shared values and a child server")
    }

    /// Runs `fuzzer` over `seeds` (`beforeEach` sees each seed before its run, `afterEach` runs
    /// after it), prints every counterexample under `label`, and expects the campaign converged.
    static func campaign(_ fuzzer: ConvergenceFuzzer, seeds: ClosedRange<UInt64>, label: String,
                         beforeEach: (UInt64) -> Void = { _ in }, afterEach: () -> Void = {}) async {
        var failures: [ConvergenceFuzzer.Counterexample] = []
        for seed in seeds {
            beforeEach(seed)
            if let failure = await fuzzer.run(seed: seed) { failures.append(failure) }
            afterEach()
        }
        for failure in failures { print("\(label): \(failure)") }
        expectConverged(failures, of: seeds.count)
    }

    /// No divergence and no lost insert; at most one run that did not settle (or start) within its
    /// timeout on a loaded machine.
    static func expectConverged(_ failures: [ConvergenceFuzzer.Counterexample], of count: Int) {
        let wrong = failures.filter { $0.failure.kind == .divergent || $0.failure.kind == .lostInsert }
        #expect(wrong.isEmpty, "\(wrong.count) of \(count) seeds diverged or lost an insert: \(wrong.map(\.seed))")
        #expect(failures.count - wrong.count <= 1, "\(failures.count - wrong.count) of \(count) seeds did not settle in time")
    }
}
