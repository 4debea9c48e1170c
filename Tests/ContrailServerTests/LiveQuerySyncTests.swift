import Contrail
import ContrailFuzz
import ContrailTestSupport
import Foundation
import Testing

/// Live queries on the replicas of convergence runs: remote change sets, rebases of pending edits,
/// reverts of refused change sets, refetches and server restarts, checked against re-filtering and
/// re-sorting at every delivery and once everything has settled.
@Suite("Live queries under sync")
@MainActor
struct LiveQuerySyncTests {
    /// Two queries on one replica and what went wrong with them.
    @MainActor
    final class Checker {
        let scope: Scope
        let even: LiveQuery<FuzzItem>
        let top: LiveQuery<FuzzItem>
        var shownEven: [ObjectIdentifier]
        var shownTop: [ObjectIdentifier]
        var problems: [String] = []
        var deliveries = 0

        init(_ scope: Scope) {
            self.scope = scope
            even = scope.query(FuzzItem.self, where: { $0.votes % 2 == 0 }, sortedBy: .ascending(\.label))
            top = scope.query(FuzzItem.self, sortedBy: .descending(\.votes), .ascending(\.label), window: 0..<4)
            shownEven = even.map(ObjectIdentifier.init)
            shownTop = top.map(ObjectIdentifier.init)
            even.onChanges(self) { [unowned self] changes in
                self.deliveries += 1
                self.verify("even", self.even, changes, &self.shownEven)
            }
            top.onChanges(self) { [unowned self] changes in
                self.deliveries += 1
                self.verify("top", self.top, changes, &self.shownTop)
            }
        }

        /// What the query should hold now: every item of the scope, re-filtered and re-sorted.
        func oracle(_ name: String) -> [ObjectIdentifier] {
            let items = scope.allObjects.compactMap { $0 as? FuzzItem }
            let tie = { (a: FuzzItem, b: FuzzItem) in a.uuid.uuidString < b.uuid.uuidString }
            if name == "even" {
                return items.filter { $0.votes % 2 == 0 }
                    .sorted { $0.label != $1.label ? $0.label < $1.label : tie($0, $1) }.map(ObjectIdentifier.init)
            }
            let sorted = items.sorted { a, b in
                if a.votes != b.votes { return a.votes > b.votes }
                return a.label != b.label ? a.label < b.label : tie(a, b)
            }
            return Array(sorted.prefix(4)).map(ObjectIdentifier.init)
        }

        func verify(_ name: String, _ query: LiveQuery<FuzzItem>, _ changes: QueryChanges, _ shown: inout [ObjectIdentifier]) {
            let now = query.map(ObjectIdentifier.init)
            if changes.replayed(on: shown, new: now) != now { problems.append("\(name): \(changes) does not lead to the contents") }
            if now != oracle(name) { problems.append("\(name): contents differ from the oracle at a delivery") }
            shown = now
        }

        /// After the run: the contents match the oracle and what the events built.
        func finalCheck() {
            for (name, query, shown) in [("even", even, shownEven), ("top", top, shownTop)] {
                let now = query.map(ObjectIdentifier.init)
                if now != oracle(name) { problems.append("\(name): contents differ from the oracle at the end") }
                if now != shown { problems.append("\(name): contents changed without an event") }
            }
        }
    }

    @MainActor
    final class Checkers {
        var all: [Checker] = []
    }

    @Test("queries on every replica of in-memory convergence runs match the oracle at every delivery")
    func queriesFollowConvergenceRuns() async {
        let fuzzer = ConvergenceFuzzer(server: .inMemory)
        fuzzer.settleTimeout = .seconds(60)
        let checkers = Checkers()
        fuzzer.replicaOpened = { scope in checkers.all.append(Checker(scope)) }
        var problems: [String] = []
        var deliveries = 0
        for seed: UInt64 in 1...25 {
            let failure = await fuzzer.run(seed: seed)
            await ChangeDelivery.main.drain()
            for checker in checkers.all {
                checker.finalCheck()
                deliveries += checker.deliveries
                problems += checker.problems.map { "seed \(seed): \($0)" }
            }
            #expect(failure == nil, "seed \(seed) did not converge: \(String(describing: failure))")
            checkers.all.removeAll()
        }
        #expect(deliveries > 100, "positive control: the queries saw the runs (\(deliveries) deliveries)")
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
    }
}
