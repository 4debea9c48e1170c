import Contrail

/// The crash test's root (`contrail test-client` and `FragmentLogCrashTests`): two collections of
/// items and a reference into them.
package final class Shelf: ModelObject {
    @Property package var step = 0
    @Property package var title = ""
    @Property package var left: [Item] = []
    @Property package var right: [Item] = []
    @Property package var featured: Item?
}

/// An item on a shelf.
package final class Item: ModelObject {
    @Property package var label = ""
    @Property package var count = 0
}
