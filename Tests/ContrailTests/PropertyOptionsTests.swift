import Contrail
import Testing

/// A child created by a property default while the parent's options are being collected.
final class OptionsChild: ModelObject {
    @Property(local: true) var childLocal = 1
    @Property var childSynced = 2
}

class OptionsBase: ModelObject {
    @Property(local: true) var baseLocal = 0
    @Property var child = OptionsChild()
    @Property var baseSynced = ""
}

final class OptionsDerived: OptionsBase {
    @Property var derivedSynced = 1.0
    @Property(local: true) var derivedLocal = false
}

@MainActor
@Suite struct PropertyOptionsTests {
    @Test func optionsBelongToTheClassThroughSubclassesAndNestedDefaults() {
        #expect(OptionsDerived().syncedPropertyNames == ["child", "baseSynced", "derivedSynced"])
        #expect(OptionsBase().syncedPropertyNames == ["child", "baseSynced"])
        #expect(OptionsChild().syncedPropertyNames == ["childSynced"])
    }

    @Test func localPropertiesOfASubclassAreNeverRecorded() throws {
        let scope = Scope(name: "options")
        let root = OptionsDerived()
        scope.root = root
        scope.flush()
        root.derivedLocal = true
        root.baseLocal = 5
        root.child.childLocal = 9
        #expect(scope.flush() == nil)
        root.derivedSynced = 2
        let changeSet = try #require(scope.flush())
        #expect(changeSet.fragments.map { Set($0.properties.keys) } == [["derivedSynced"]])
    }
}
