import Contrail

/// The crash test's root (`contrail test-client` and `FragmentLogCrashTests`): two collections of
/// items and a reference into them.
public final class Shelf: ModelObject {
    @Property public var step = 0
    @Property public var title = ""
    @Property public var left: [Item] = []
    @Property public var right: [Item] = []
    @Property public var featured: Item?
}

/// An item on a shelf.
public final class Item: ModelObject {
    @Property public var label = ""
    @Property public var count = 0
}
