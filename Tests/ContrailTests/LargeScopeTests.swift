import Contrail
import Foundation
import Testing

/// A node of the large trees.
final class BulkNode: ModelObject {
    @Property var label = ""
    @Property var weight: Double = 0
    @Property var children: [BulkNode] = []
}

@MainActor
@Suite struct LargeScopeTests {
    /// A root with `branches` children of `leaves` leaves each: 1 + branches × (1 + leaves) objects.
    func makeTree(branches: Int, leaves: Int) -> BulkNode {
        let root = BulkNode()
        root.label = "root"
        root.children = (0..<branches).map { branch in
            let node = BulkNode()
            node.label = "branch \(branch)"
            node.children = (0..<leaves).map { leaf in
                let child = BulkNode()
                child.weight = Double(branch * leaves + leaf) / 8
                return child
            }
            return node
        }
        return root
    }

    @Test func aHundredThousandObjectSnapshotAppliesOntoAFreshScope() throws {
        let scope = Scope(name: "large")
        let root = makeTree(branches: 316, leaves: 316)
        scope.root = root
        #expect(scope.count == 1 + 316 * 317)
        #expect(scope.count >= 100_000)
        #expect(scope.flush() == nil)   // the root's tree joins with the root: nothing to send

        let snapshot = scope.snapshot()
        #expect(snapshot.count == scope.count)

        let replica = Scope(name: "large")
        replica.root = BulkNode(uuid: root.uuid)
        let report = try replica.apply(snapshot)
        #expect(report.appliedFragments == snapshot.count)
        #expect(report.unknownProperties.isEmpty && report.unknownObjects.isEmpty)
        #expect(replica.count == scope.count)
        // Pre-order snapshots: equal exactly when both trees hold the same objects, values and order.
        // (The same comparison as `stateJSON()`, without building two 100,000-member objects in a debug build.)
        let copied = replica.snapshot()
        #expect(copied.count == snapshot.count)
        let firstDifference = copied.indices.first { copied[$0] != snapshot[$0] }
        #expect(firstDifference == nil)
        #expect(replica.flush() == nil)

        // Spot checks on typed values, deep in the tree.
        let copy = try #require(replica.root as? BulkNode)
        #expect(copy.children.count == 316)
        #expect(copy.children[314].label == "branch 314")
        #expect(copy.children[314].children[315].weight == Double(314 * 316 + 315) / 8)
        #expect(copy.children[7].children[0].scope === replica)
    }

    @Test func aLargeChangeSetAppliesOntoAReplica() throws {
        let scope = Scope(name: "large")
        let root = makeTree(branches: 100, leaves: 100)
        scope.root = root
        let replica = Scope(name: "large")
        replica.root = BulkNode(uuid: root.uuid)
        try replica.apply(scope.snapshot())
        scope.flush()

        for branch in root.children {
            for leaf in branch.children { leaf.weight += 1 }
            branch.children.swapAt(0, branch.children.count - 1)
        }
        root.children.removeLast(10)
        let changeSet = try #require(scope.flush())
        // Leaves and branches that left the scope in this flush send nothing.
        #expect(changeSet.fragments.count == 90 * 100 + 90 + 1)
        try replica.apply(changeSet.fragments)
        #expect(replica.stateJSON() == scope.stateJSON())
        #expect(replica.count == scope.count)
        #expect(replica.count == 1 + 90 * 101)
    }
}
