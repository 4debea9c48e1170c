@testable import Contrail
import ContrailTestSupport
import Foundation
import Observation
import Synchronization
import Testing

/// A task for the query tests (wire names of their own: other suites hold `Shape` and `Canvas`).
final class QTask: ModelObject {
    @Property var title = ""
    @Property var done = false
    @Property var priority = 0
    @Property var rank: Double = 0
    @Property var due: Date?
    @Property(local: true) var isSelected = false
}

/// The root of the query tests' trees: tasks in two collections and a reference.
final class QBoard: ModelObject {
    @Property var tasks: [QTask] = []
    @Property var archive: [QTask] = []
    @Property var pinned: QTask?
}

/// What the query tests observe with.
@MainActor
final class QueryWatcher {
    var received: [QueryChanges] = []
}

@Suite("Live queries")
@MainActor
struct LiveQueryTests {
    init() {
        ModelRegistry.register(QBoard.self)
        ModelRegistry.register(QTask.self)
    }

    static func task(_ title: String, priority: Int = 0, done: Bool = false, rank: Double = 0) -> QTask {
        let task = QTask()
        task.title = title
        task.priority = priority
        task.done = done
        task.rank = rank
        return task
    }

    static func board(_ tasks: [QTask]) -> (Scope, QBoard) {
        let scope = Scope(name: "tasks")
        let board = QBoard()
        board.tasks = tasks
        scope.root = board
        scope.flush()
        return (scope, board)
    }

    static func titles(_ query: LiveQuery<QTask>) -> [String] { query.map(\.title) }

    // MARK: - The order-statistic tree

    @Test("the counted B+ tree agrees with a sorted array through random inserts and removals", arguments: [4, 5, 64])
    func treeAgreesWithSortedArray(capacity: Int) {
        var random = SystemRandomNumberGenerator()
        // Searches compare prefixes first: none (every search compares elements), a coarse one (runs
        // of equal prefixes), an exact one.
        let prefix: (Int) -> UInt64 = capacity == 4 ? { _ in 0 } : capacity == 5 ? { UInt64($0 / 40) } : { UInt64($0) }
        for round in 0..<4 {
            let initial = Array(Set((0..<(round * 150)).map { _ in Int.random(in: 0..<5000, using: &random) })).sorted()
            let tree = OrderStatisticTree(sorted: initial, capacity: capacity, less: <, prefix: prefix)
            var oracle = initial
            #expect(tree.isValid() && tree.all == oracle)
            for _ in 0..<1500 {
                let value = Int.random(in: 0..<5000, using: &random)
                let position = oracle.firstIndex { $0 >= value } ?? oracle.count
                if position < oracle.count, oracle[position] == value {
                    #expect(tree.index(of: value) == position)
                    #expect(tree.remove(value) == position)
                    oracle.remove(at: position)
                } else {
                    #expect(tree.index(of: value) == nil)
                    #expect(tree.remove(value) == nil)
                    #expect(tree.insert(value) == position)
                    oracle.insert(value, at: position)
                }
                #expect(tree.count == oracle.count)
            }
            #expect(tree.isValid())
            #expect(tree.all == oracle)
            if !oracle.isEmpty {
                let at = Int.random(in: 0..<oracle.count, using: &random)
                #expect(tree[at] == oracle[at])
                #expect(tree.elements(in: at..<(at + 7)) == Array(oracle[at..<min(oracle.count, at + 7)]))
            }
            // Emptying it entirely keeps it valid.
            for value in oracle.shuffled(using: &random) { tree.remove(value) }
            #expect(tree.count == 0 && tree.isValid() && tree.all.isEmpty)
        }
    }

    @Test("an entry's encoded first key orders as the key's comparison does, in both directions")
    func encodedKeysOrderAsCompare() {
        var random = SeededGenerator(seed: 29)
        let specials: [Double] = [0, -0.0, .infinity, -.infinity, .nan, -.nan, .greatestFiniteMagnitude, -.leastNonzeroMagnitude, 1, -1]
        let doubles = specials + (0..<40).map { _ in Double.random(in: -1e6..<1e6, using: &random) }
        let ints = [Int64.min, Int64.max, 0, -1, 1] + (0..<40).map { _ in Int64.random(in: -1000..<1000, using: &random) }
        let unsigned = [UInt64.min, UInt64.max, 1] + (0..<40).map { _ in UInt64.random(in: 0..<1000, using: &random) }
        let groups: [[QueryKeyComponent]] = [doubles.map { .double($0) } + [.null], ints.map { .int($0) } + [.null],
                                             unsigned.map { .unsigned($0) } + [.null]]
        for group in groups {
            for descending in [false, true] {
                for a in group {
                    for b in group {
                        let x = a.encoded(isInline: true, descending: descending)
                        let y = b.encoded(isInline: true, descending: descending)
                        let order = x.tag != y.tag ? (x.tag < y.tag ? -1 : 1) : (x.key < y.key ? -1 : (x.key == y.key ? 0 : 1))
                        let expected = descending ? -a.compare(b) : a.compare(b)
                        #expect(order == expected, "\(a) against \(b), descending \(descending)")
                    }
                }
            }
        }
        // A string is not inline: every value encodes alike, and the entries compare their keys.
        let a = QueryKeyComponent.string("a").encoded(isInline: false, descending: false)
        let b = QueryKeyComponent.string("b").encoded(isInline: false, descending: false)
        #expect(a.tag == b.tag && a.key == b.key)
        #expect(QueryKeyComponent.isInline(Double.self) && QueryKeyComponent.isInline(Date.self) && !QueryKeyComponent.isInline(String.self))
    }

    @Test("a change set's random id is a version 4 uuid, a new one each time")
    func changeSetIDsAreRandom() {
        let ids = (0..<1000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 4 && id.uuid.8 >> 6 == 0b10, "\(id)")
        }
        #expect(ChangeSet(fragments: [], changes: [], message: nil, isAtomic: false, origin: .local, state: .syncing, scope: nil).id
                    != ChangeSet(fragments: [], changes: [], message: nil, isAtomic: false, origin: .local, state: .syncing, scope: nil).id)
    }

    // MARK: - Changes as index sets

    @Test("moves are reported only for objects whose place among the others changed")
    func movesAreMinimal() {
        // One candidate that lands where it was: an update, not a move.
        #expect(QueryDiff.moved([(3, 3)], oldUnstable: [3], newUnstable: [3]) == [false])
        #expect(QueryDiff.moved([(3, 5)], oldUnstable: [3], newUnstable: [5]) == [true])
        // A removal before it shifts it by one: still in place.
        #expect(QueryDiff.moved([(3, 2)], oldUnstable: [0, 3], newUnstable: [2]) == [false])
        // Two candidates that swapped between the same stable neighbours: one of them moves.
        #expect(QueryDiff.moved([(1, 2), (2, 1)], oldUnstable: [1, 2], newUnstable: [1, 2]).filter { $0 }.count == 1)
        #expect(QueryDiff.longestIncreasingRun([5, 1, 2, 3]) == [1, 2, 3])
    }

    // MARK: - A query's contents and events

    @Test("a query filters, sorts, and changes only at delivery, with the events of the change")
    func filtersSortsAndDelivers() async {
        let a = Self.task("a", priority: 1), b = Self.task("b", priority: 3), c = Self.task("c", priority: 2, done: true)
        let (scope, board) = Self.board([a, b, c])
        let query = scope.query(QTask.self, where: { !$0.done }, sortedBy: .descending(\.priority))
        #expect(Self.titles(query) == ["b", "a"])
        #expect(query.totalCount == 2)
        let watcher = QueryWatcher()
        query.onChanges(watcher) { watcher.received.append($0) }

        c.done = false               // joins at index 1
        a.priority = 5               // moves to the top
        #expect(Self.titles(query) == ["b", "a"], "nothing changes before the delivery")
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["a", "b", "c"])
        #expect(watcher.received.count == 1)
        let changes = watcher.received[0]
        #expect(changes.inserted == [2])
        #expect(changes.moved == [QueryMove(from: 1, to: 0)])
        #expect(changes.removed.isEmpty && changes.updated.isEmpty)

        // A change that does not move it is an update; one the filter rejects a removal.
        b.title = "B"
        board.tasks.removeAll { $0 === c }   // leaves the scope
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["a", "B"])
        #expect(watcher.received.count == 2)
        #expect(watcher.received[1].updated == [1] && watcher.received[1].removed == [2])

        // A change undone within the turn delivers nothing; a local property is seen too.
        a.priority = 0
        a.priority = 5
        await ChangeDelivery.main.drain()
        #expect(watcher.received.count == 3 && watcher.received[2].updated == [0] && !watcher.received[2].changesOrder)
        let selected = scope.query(QTask.self, where: { $0.isSelected })
        b.isSelected = true
        await ChangeDelivery.main.drain()
        #expect(selected.map(\.title) == ["B"])
    }

    @Test("a query sees objects anywhere in the scope, joining and leaving it")
    func seesTheWholeScope() async {
        let a = Self.task("a"), b = Self.task("b")
        let (scope, board) = Self.board([a])
        let query = scope.query(QTask.self, sortedBy: .ascending(\.title))
        #expect(Self.titles(query) == ["a"])
        board.archive = [b]          // another collection
        board.pinned = Self.task("p")  // a reference
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["a", "b", "p"])
        board.tasks = []
        board.archive.append(a)      // a moves between collections: stays in the query
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["a", "b", "p"])
        scope.root = nil             // everything leaves
        await ChangeDelivery.main.drain()
        #expect(query.isEmpty && query.totalCount == 0)
        // Positive control on a second scope: the same objects count there.
        let other = Scope(name: "other")
        other.root = board
        let elsewhere = other.query(QTask.self)
        #expect(elsewhere.count == 3)
    }

    @Test("the queries of a scope share one row per object: a row is let go when its object leaves, and numbers are reused")
    func sharedRows() async throws {
        let tasks = (0..<6).map { Self.task("t\($0)", priority: $0) }
        let (scope, board) = Self.board(tasks)
        var all: LiveQuery<QTask>? = scope.query(QTask.self, sortedBy: .ascending(\.priority))
        var high: LiveQuery<QTask>? = scope.query(QTask.self, where: { $0.priority > 2 }, sortedBy: .descending(\.priority), window: 0..<2)
        let hub = try #require(scope.queryHub)
        let leaving = tasks[1]
        let row = try #require(hub.existingRow(of: leaving))
        #expect(hub.existingRow(of: tasks[4])?.index != row.index)
        board.tasks.remove(at: 1)
        await ChangeDelivery.main.drain()
        #expect(hub.existingRow(of: leaving) == nil)  // let go: the hub no longer holds the object
        #expect(all.map(Self.titles) == ["t0", "t2", "t3", "t4", "t5"])
        // A newcomer takes the free number; both queries see it where it belongs.
        let newcomer = Self.task("n", priority: 9)
        board.archive.append(newcomer)
        await ChangeDelivery.main.drain()
        #expect(hub.existingRow(of: newcomer)?.index == row.index)
        #expect(all.map(Self.titles) == ["t0", "t2", "t3", "t4", "t5", "n"])
        #expect(high.map(Self.titles) == ["n", "t5"])
        // The one that left comes back: a match again, with a row of its own.
        board.archive.append(leaving)
        leaving.priority = 10
        await ChangeDelivery.main.drain()
        #expect(all.map(Self.titles) == ["t0", "t2", "t3", "t4", "t5", "n", "t1"])
        #expect(high.map(Self.titles) == ["t1", "n"])
        #expect(high?.offset(of: leaving) == 0 && all?.offset(of: leaving) == 6)
        // Once no query is left, the rows go too (not while one lives).
        all = nil
        hub.flush()
        #expect(hub.rowCount > 0)
        high = nil
        hub.flush()
        #expect(hub.rowCount == 0)
    }

    @Test("a window shows a part of the matches; moving it delivers what left and entered")
    func windows() async {
        let tasks = (0..<20).map { Self.task(String(format: "t%02d", $0), priority: $0) }
        let (scope, _) = Self.board(tasks)
        let query = scope.query(QTask.self, sortedBy: .ascending(\.priority), window: 0..<5)
        #expect(Self.titles(query) == ["t00", "t01", "t02", "t03", "t04"])
        #expect(query.totalCount == 20 && query.count == 5)
        let watcher = QueryWatcher()
        query.onChanges(watcher) { watcher.received.append($0) }

        tasks[15].priority = 100     // far outside the window: no event
        await ChangeDelivery.main.drain()
        #expect(watcher.received.isEmpty)
        tasks[2].priority = -1       // inside: a move
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["t02", "t00", "t01", "t03", "t04"])
        #expect(watcher.received.last?.moved == [QueryMove(from: 2, to: 0)])
        tasks[10].priority = -2      // from below into the window: t04 drops out
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["t10", "t02", "t00", "t01", "t03"])
        #expect(watcher.received.last?.inserted == [0] && watcher.received.last?.removed == [4])

        query.window = 3..<6
        #expect(query.count == 5, "the window moves at the delivery")
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["t01", "t03", "t04"])
        #expect(watcher.received.last?.removed == [0, 1, 2] && watcher.received.last?.inserted == [2])
        #expect(query.offset(of: tasks[4]) == 5 && query.offset(of: tasks[15]) == 19)
        query.window = nil
        await ChangeDelivery.main.drain()
        #expect(query.count == 20)
        query.window = 18..<30
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["t19", "t15"])
    }

    @Test("a query is Observable: SwiftUI and withObservationTracking see its contents change")
    func observable() async {
        let a = Self.task("a", priority: 1), b = Self.task("b", priority: 2)
        let (scope, _) = Self.board([a, b])
        let query = scope.query(QTask.self, sortedBy: .ascending(\.priority))
        let fires = ModelObservableTests.Fires()
        withObservationTracking { _ = query.first } onChange: { fires.count.add(1, ordering: .relaxed) }
        a.title = "A"                // an update in place: the contents (which objects, in which order) stay
        await ChangeDelivery.main.drain()
        #expect(fires.count.load(ordering: .relaxed) == 0)
        a.priority = 3
        await ChangeDelivery.main.drain()
        #expect(fires.count.load(ordering: .relaxed) == 1)
        #expect(Self.titles(query) == ["b", "A"])
    }

    @Test("the changes as an AsyncSequence: one element per delivery, merged when the consumer fell behind, ended with the query")
    func asyncSequence() async {
        let a = Self.task("a", priority: 1), b = Self.task("b", priority: 2)
        let (scope, _) = Self.board([a, b])
        var query: LiveQuery<QTask>? = scope.query(QTask.self, sortedBy: .ascending(\.priority))
        var iterator = query!.changes().makeAsyncIterator()
        a.priority = 3
        await ChangeDelivery.main.drain()
        let first = await iterator.next()
        #expect(first?.moved == [QueryMove(from: 0, to: 1)])
        // Two deliveries before the consumer reads: one change that leads to the current contents.
        b.priority = 4
        await ChangeDelivery.main.drain()
        a.title = "A"
        scope.root.map { ($0 as? QBoard)?.tasks.append(Self.task("c", priority: 0)) }
        await ChangeDelivery.main.drain()
        let merged = await iterator.next()
        #expect(merged == QueryChanges.replacingAll(oldCount: 2, newCount: 3))
        #expect(query.map(Self.titles) == ["c", "A", "b"])
        query = nil
        let end = await iterator.next()
        #expect(end == nil)
    }

    @Test("a cancelled token, or a freed observer, hears nothing more")
    func cancelling() async {
        let a = Self.task("a", priority: 1)
        let (scope, _) = Self.board([a])
        let query = scope.query(QTask.self, sortedBy: .ascending(\.priority))
        let watcher = QueryWatcher()
        let token = query.onChanges(watcher) { watcher.received.append($0) }
        a.priority = 2
        await ChangeDelivery.main.drain()
        #expect(watcher.received.count == 1)
        token.cancel()
        a.priority = 3
        await ChangeDelivery.main.drain()
        #expect(watcher.received.count == 1)
    }

    @Test("remote batches, undo, revert and a full state are each one consistent delivery")
    func syncPaths() async throws {
        let a = Self.task("a", priority: 1), b = Self.task("b", priority: 2)
        let (scope, board) = Self.board([a, b])
        let query = scope.query(QTask.self, where: { !$0.done }, sortedBy: .ascending(\.priority))
        let watcher = QueryWatcher()
        query.onChanges(watcher) { watcher.received.append($0) }
        // A remote batch that changes two objects and adds one: one delivery.
        let c = UUID()
        try scope.apply([
            SyncFragment(kind: .change, uuid: a.uuid, className: "QTask", properties: ["priority": .int(9)]),
            SyncFragment(kind: .add, uuid: c, className: "QTask", properties: ["title": .string("c"), "priority": .int(0)]),
            SyncFragment(kind: .change, uuid: board.uuid, className: "QBoard",
                         properties: ["tasks": .array([a, b].map { .string($0.uuid.uuidString.lowercased()) } + [.string(c.uuidString.lowercased())])]),
        ])
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["c", "b", "a"])
        #expect(watcher.received.count == 1)
        // Undo of a local change, and revert of another.
        let set = scope.modify { b.done = true }
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["c", "a"])
        set?.revert()
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["c", "b", "a"])
        scope.modify { a.priority = -1 }
        scope.undo()
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["c", "b", "a"])
        // A full state that keeps only b.
        let count = watcher.received.count
        try scope.applyState(rootUUID: board.uuid, fragments: [
            SyncFragment(kind: .add, uuid: board.uuid, className: "QBoard", properties: ["tasks": .array([.string(b.uuid.uuidString.lowercased())])]),
            SyncFragment(kind: .add, uuid: b.uuid, className: "QTask", properties: ["title": .string("b"), "priority": .int(2)]),
        ])
        await ChangeDelivery.main.drain()
        #expect(Self.titles(query) == ["b"])
        #expect(watcher.received.count == count + 1)
    }

    // MARK: - The property test against a brute-force oracle

    /// One query of the property test and its oracle.
    struct Probe {
        let query: LiveQuery<QTask>
        let filter: @MainActor (QTask) -> Bool
        let before: (QTask, QTask) -> Bool
        var contents: [ObjectIdentifier]
        var received: [QueryChanges] = []
    }

    static func byUUID(_ a: QTask, _ b: QTask) -> Bool { a.uuid.uuidString < b.uuid.uuidString }

    /// -1, 0, 1 for doubles, NaN after every number (the query's order).
    static func compare(_ a: Double, _ b: Double) -> Int {
        if a < b { return -1 }
        if b < a { return 1 }
        if a == b || (a.isNaN && b.isNaN) { return 0 }
        return a.isNaN ? 1 : -1
    }

    /// The contents a query should have now: re-filter, re-sort, cut the window.
    static func oracle(_ scope: Scope, _ probe: Probe) -> [QTask] {
        let all = scope.allObjects.compactMap { $0 as? QTask }.filter(probe.filter).sorted(by: probe.before)
        guard let window = probe.query.window else { return all }
        return Array(all[min(all.count, window.lowerBound)..<min(all.count, window.upperBound)])
    }

    /// The values of every task, to find the ones a turn changed.
    static func values(_ scope: Scope) -> [ObjectIdentifier: String] {
        var result: [ObjectIdentifier: String] = [:]
        for case let task as QTask in scope.allObjects {
            result[ObjectIdentifier(task)] = "\(task.title)|\(task.done)|\(task.priority)|\(task.rank)|\(String(describing: task.due))"
        }
        return result
    }

    @Test("random edits, remote batches, undo, revert, full states and window moves: every delivery matches re-filtering, re-sorting and diffing",
          arguments: 0..<12)
    func propertyAgainstOracle(seed: Int) async throws {
        var random = SeededGenerator(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let (scope, board) = Self.board((0..<30).map { Self.task("t\($0)", priority: $0 % 7, rank: Double($0 % 5)) })
        // A second replica whose change sets reach the first as remote batches.
        let remote = Scope(name: "tasks")
        let remoteBoard = QBoard()
        remote.root = remoteBoard
        try remote.applyState(rootUUID: board.uuid, fragments: scope.snapshot())
        var outgoing: [SyncFragment] = []
        let sink = QueryWatcher()
        remote.onChanges(sink) { outgoing += $0.fragments }
        var localSets: [ChangeSet] = []
        scope.onChanges(sink) { if $0.origin == .local { localSets.append($0) } }

        func probe(_ filter: @escaping @MainActor (QTask) -> Bool, _ before: @escaping (QTask, QTask) -> Bool,
                   _ sort: [QuerySort<QTask>], window: Range<Int>?) -> Probe {
            let query: LiveQuery<QTask>
            switch sort.count {
            case 0: query = scope.query(QTask.self, where: filter, window: window)
            case 1: query = scope.query(QTask.self, where: filter, sortedBy: sort[0], window: window)
            default: query = scope.query(QTask.self, where: filter, sortedBy: sort[0], sort[1], window: window)
            }
            return Probe(query: query, filter: filter, before: before, contents: query.map(ObjectIdentifier.init))
        }
        var probes = [
            probe({ !$0.done }, { a, b in
                if a.priority != b.priority { return a.priority > b.priority }
                let c = Self.compare(a.rank, b.rank)
                return c != 0 ? c < 0 : Self.byUUID(a, b)
            }, [.descending(\.priority), .ascending(\.rank)], window: nil),
            probe({ _ in true }, { a, b in a.title != b.title ? a.title < b.title : Self.byUUID(a, b) },
                  [.ascending(\.title)], window: 3..<9),
            probe({ $0.priority % 2 == 0 }, { a, b in
                switch (a.due, b.due) {
                case (nil, nil): return Self.byUUID(a, b)
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?): return x != y ? x < y : Self.byUUID(a, b)
                }
            }, [.ascending(\.due)], window: 0..<5),
            probe({ $0.title.count < 4 }, Self.byUUID, [], window: 2..<6),
        ]
        var collectors = probes.map { _ in QueryWatcher() }
        for (index, probe) in probes.enumerated() {
            let collector = collectors[index]
            probe.query.onChanges(collector) { collector.received.append($0) }
        }

        func tasks() -> [QTask] { scope.allObjects.compactMap { $0 as? QTask } }
        func pick() -> QTask? {
            let all = tasks()
            return all.isEmpty ? nil : all[Int.random(in: 0..<all.count, using: &random)]
        }
        func edit(_ task: QTask) {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: task.priority = Int.random(in: 0..<8, using: &random)
            case 1: task.done.toggle()
            case 2: task.rank = Bool.random(using: &random) ? .nan : Double(Int.random(in: 0..<6, using: &random))
            case 3: task.title = "t\(Int.random(in: 0..<60, using: &random))"
            case 4: task.due = Bool.random(using: &random) ? nil : Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<5, using: &random)))
            default: task.isSelected.toggle()
            }
        }

        for step in 0..<60 {
            let before = Self.values(scope)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                switch Int.random(in: 0..<12, using: &random) {
                case 0...3:
                    if let task = pick() { edit(task) }
                case 4:
                    board.tasks.insert(Self.task("n\(step)", priority: Int.random(in: 0..<8, using: &random)),
                                       at: Int.random(in: 0...board.tasks.count, using: &random))
                case 5:
                    if !board.tasks.isEmpty { board.tasks.remove(at: Int.random(in: 0..<board.tasks.count, using: &random)) }
                case 6:
                    if !board.tasks.isEmpty { board.archive.append(board.tasks.remove(at: Int.random(in: 0..<board.tasks.count, using: &random))) }
                case 7:
                    // A remote batch: edits made on the other replica, applied here as one.
                    let theirs = remote.allObjects.compactMap { $0 as? QTask }
                    for _ in 0..<Int.random(in: 1...5, using: &random) where !theirs.isEmpty {
                        let task = theirs[Int.random(in: 0..<theirs.count, using: &random)]
                        task.priority = Int.random(in: 0..<8, using: &random)
                        if Bool.random(using: &random) { task.done.toggle() }
                    }
                    if Bool.random(using: &random) { remoteBoard.tasks.append(Self.task("r\(step)", priority: 3)) }
                    remote.flush()
                    _ = try? scope.apply(outgoing)
                    outgoing.removeAll()
                case 8:
                    scope.flush()
                    scope.undo()
                case 9:
                    scope.flush()
                    if !localSets.isEmpty { localSets.remove(at: Int.random(in: 0..<localSets.count, using: &random)).revert() }
                case 10:
                    // A refetch: the full state of the other replica replaces this one.
                    if Int.random(in: 0..<3, using: &random) == 0 {
                        _ = try? scope.applyState(rootUUID: board.uuid, fragments: remote.snapshot())
                    }
                default:
                    let probe = probes[Int.random(in: 1..<probes.count, using: &random)]
                    let start = Int.random(in: 0..<12, using: &random)
                    probe.query.window = Bool.random(using: &random) ? start..<(start + Int.random(in: 0..<8, using: &random)) : probe.query.window
                }
            }
            // Nothing is seen before the delivery.
            for probe in probes { #expect(probe.query.map(ObjectIdentifier.init) == probe.contents, "seed \(seed) step \(step): changed before delivery") }
            ChangeDelivery.main.deliverPending()
            let changedObjects = Set(Self.values(scope).filter { before[$0.key] != nil && before[$0.key] != $0.value }.keys)
            for index in probes.indices {
                let probe = probes[index]
                let expected = Self.oracle(scope, probe).map(ObjectIdentifier.init)
                let actual = probe.query.map(ObjectIdentifier.init)
                #expect(actual == expected, "seed \(seed) step \(step) query \(index): contents differ from the oracle")
                let deliveries = collectors[index].received
                collectors[index].received.removeAll()
                #expect(deliveries.count <= 1, "seed \(seed) step \(step) query \(index): \(deliveries.count) deliveries in one turn")
                if let changes = deliveries.first {
                    let applied = changes.replayed(on: probe.contents, new: actual)
                    #expect(applied == actual, "seed \(seed) step \(step) query \(index): \(changes) does not turn the old contents into the new")
                    // Every object that stayed in the contents and changed is reported.
                    let moved = Set(changes.moved.map(\.from))
                    for (position, id) in probe.contents.enumerated() where changedObjects.contains(id) && actual.contains(id) {
                        #expect(changes.updated.contains(position) || moved.contains(position),
                                "seed \(seed) step \(step) query \(index): changed object at \(position) not reported")
                    }
                } else {
                    #expect(actual == probe.contents, "seed \(seed) step \(step) query \(index): contents changed without changes")
                    #expect(!actual.contains { changedObjects.contains($0) },
                            "seed \(seed) step \(step) query \(index): an object changed without an update")
                }
                #expect(probe.query.totalCount == scope.allObjects.compactMap { $0 as? QTask }.filter(probe.filter).count)
                probes[index].contents = actual
            }
            // Deliveries run their own turn: what callbacks queue comes next.
            await ChangeDelivery.main.drain()
            for index in probes.indices { collectors[index].received.removeAll() }
        }
        withExtendedLifetime(collectors) {}
        collectors.removeAll()
    }
}
