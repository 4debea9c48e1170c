@testable import Contrail
@testable import ContrailWire
import Foundation
import Testing

/// `ModelObject` identity: `Identifiable` by `uuid`, made lazily, and what a fetch does to it.
@MainActor
@Suite struct ModelIdentityTests {
    func ids<Element: Identifiable>(_ elements: [Element]) -> [Element.ID] { elements.map(\.id) }

    @Test func idIsTheUUIDAndStable() {
        let shape = Shape()
        let uuid = shape.uuid
        #expect(shape.id == uuid)
        #expect(shape.uuid == uuid, "asked twice, the same uuid")
        #expect(Shape().uuid != uuid)
        let given = UUID()
        #expect(Shape(uuid: given).id == given)
        #expect(ids([shape]) == [uuid], "usable where an Identifiable is expected")
    }

    @Test func aNewObjectStoresNoIdentityUntilAsked() {
        let shape = Shape()
        #expect(shape._tracking == nil)
        _ = shape.id
        #expect(shape._tracking != nil)
    }

    @Test func fetchGivesTheRootTheServersUUIDAndIDFollows() throws {
        let (scope, canvas, shape) = scopedShape()
        let localRoot = canvas.id
        let shapeID = shape.id
        let serverRoot = UUID()
        try scope.applyState(rootUUID: serverRoot, fragments: [
            SyncFragment(kind: .change, uuid: serverRoot, className: "Canvas",
                         properties: ["shapes": .array([.string(shape.uuid.uuidString)])]),
            SyncFragment(kind: .add, uuid: shape.uuid, className: "Shape", properties: ["x": 1]),
        ])
        #expect(localRoot != serverRoot)
        #expect(canvas.uuid == serverRoot && canvas.id == serverRoot, "the root takes the server's identity")
        #expect(scope.object(for: serverRoot) === canvas && scope.object(for: localRoot) == nil)
        #expect(shape.id == shapeID, "every other object keeps its identity")
    }

    @Test func aScopeDroppedWithPendingChangesFreesItsObjects() {
        weak var weakShape: Shape?
        weak var weakScope: Scope?
        do {
            let (scope, _, shape) = scopedShape()
            shape.x = 1
            #expect(scope.pending[shape] != nil, "positive control: the set is pending")
            weakShape = shape
            weakScope = scope
        }
        #expect(weakScope == nil)
        #expect(weakShape == nil)
    }

    /// Members hold their scope unretained; the scope's deinit must let go of every one of them.
    @Test func membersThatOutliveTheirScopeLeaveItAndStayUsable() {
        weak var weakScope: Scope?
        var scope: Scope? = Scope(name: "s")
        let canvas = Canvas()
        let shape = Shape()
        canvas.shapes = [shape]
        scope?.root = canvas
        weakScope = scope
        #expect(shape.scope === scope && canvas.scope === scope, "positive control: both are members")
        scope = nil
        #expect(weakScope == nil, "nothing else holds the scope")
        #expect(shape.scope == nil && canvas.scope == nil)
        shape.x = 3
        canvas.shapes.append(Shape())
        #expect(shape.x == 3 && canvas.shapes.count == 2, "sets still work, recorded nowhere")
        let next = Scope(name: "t")
        next.root = canvas
        #expect(canvas.shapes.allSatisfy { $0.scope === next }, "and they can join another scope")
    }

    @Test func repeatedSetsInOneFlushKeepTheFirstOriginal() throws {
        let (scope, _, shape) = scopedShape()
        for value in 1...5 { shape.x = Double(value) }
        shape.y = 2
        let changeSet = try #require(scope.flush())
        #expect(changeSet.fragments.map(\.properties) == [["x": .double(5), "y": .double(2)]])
        changeSet.revert()
        #expect(shape.x == 0 && shape.y == 0)
    }
}
