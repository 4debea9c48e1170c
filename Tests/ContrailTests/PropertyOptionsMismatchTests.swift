import Contrail
import Foundation
import Testing

/// Makes the wrapper of `secret` in its initialiser: it reports the initialiser's position, not the
/// declaration's, so the options cannot be matched, and `secret` (local) could otherwise sync.
final class SwappedOptionsModel: ModelObject {
    @Property var secret: Int
    @Property var name = ""

    required init(uuid: UUID) {
        _secret = Property(wrappedValue: 0, local: true)
        super.init(uuid: uuid)
    }
}

/// `SwappedOptionsModel` for the exit test (a class is refused once per process).
final class TrappingOptionsModel: ModelObject {
    @Property var secret: Int
    @Property var name = ""

    required init(uuid: UUID) {
        _secret = Property(wrappedValue: 0, local: true)
        super.init(uuid: uuid)
    }
}

/// The body assigns `title` after the initial value of `draft` ran: the options are reported in
/// another order than the properties are declared (and both are Strings), yet each is matched
/// to its own declaration. Options used to go by report order: `draft` synced, `title` did not.
final class BodyAssignedModel: ModelObject {
    @Property var title: String
    @Property(local: true) var draft = ""

    required init(uuid: UUID) {
        title = ""
        super.init(uuid: uuid)
    }
}

/// Out of order, but every declaration has the default options: nothing to lose, so accepted.
final class DefaultOptionsModel: ModelObject {
    @Property var count: Int
    @Property var name = ""

    required init(uuid: UUID) {
        _count = Property(wrappedValue: 0)
        super.init(uuid: uuid)
    }
}

@MainActor
@Suite(.serialized) struct PropertyOptionsMismatchTests {
    @Test func optionsAreMatchedByDeclarationWhateverTheInitialiserOrder() throws {
        try ModelRegistry.validate(BodyAssignedModel.self, DefaultOptionsModel.self)
        #expect(BodyAssignedModel().syncedPropertyNames == ["title"])
        #expect(DefaultOptionsModel().syncedPropertyNames == ["count", "name"])
        let scope = Scope(name: "ordered")
        let root = BodyAssignedModel()
        scope.root = root
        scope.flush()
        root.draft = "not synced"
        #expect(scope.flush() == nil)
        root.title = "synced"
        #expect(scope.flush()?.fragments.map { Set($0.properties.keys) } == [["title"]])
        let report = try scope.apply([SyncFragment(kind: .add, uuid: UUID(), className: "DefaultOptionsModel", properties: [:])])
        #expect(report.appliedFragments == 1)
    }

    @Test func unmatchedOptionsRefuseTheClassWithATypedError() throws {
        ModelRegistry.trapsOnOptionsMismatch = false
        defer { ModelRegistry.trapsOnOptionsMismatch = true }
        let expected = ModelError.propertyOptionsMismatch(className: "SwappedOptionsModel", declarations: 2, properties: 2)
        #expect(throws: expected) { try ModelRegistry.validate(SwappedOptionsModel.self) }
        #expect(throws: expected) { try ModelRegistry.modelClass(named: "SwappedOptionsModel") }
        #expect(expected.description.contains("cannot be matched"))
        // Refused: no property syncs, so the local one cannot leak.
        let model = SwappedOptionsModel()
        #expect(model.syncedPropertyNames.isEmpty)
        let scope = Scope(name: "refused")
        let root = DefaultOptionsModel()
        scope.root = root
        scope.flush()
        let fragment = SyncFragment(kind: .add, uuid: UUID(), className: "SwappedOptionsModel", properties: ["name": .string("x")])
        #expect(throws: expected) { try scope.apply([fragment]) }
        #expect(scope.count == 1)
    }

    @Test func unmatchedOptionsTrapInDebugBuilds() async {
        #if DEBUG
        await #expect(processExitsWith: .failure) {
            await MainActor.run { _ = TrappingOptionsModel().syncedPropertyNames }
        }
        #endif
    }
}
