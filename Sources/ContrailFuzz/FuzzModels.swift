import Contrail
import Foundation

/// The fuzzer's root: scalars, two collections that items move between, and a reference.
package final class FuzzBoard: ModelObject {
    @Property package var title = ""
    @Property package var score = 0
    @Property package var items: [FuzzItem] = []
    @Property package var shelf: [FuzzItem] = []
    @Property package var pinned: FuzzItem?
}

/// An item: scalars, a nested collection of notes, and a reference to another item.
package class FuzzItem: ModelObject {
    @Property package var label = ""
    @Property package var votes = 0
    @Property package var notes: [FuzzNote] = []
    @Property package var link: FuzzItem?
}

/// A note nested in an item.
package final class FuzzNote: ModelObject {
    @Property package var text = ""
}

/// An item of a class only some replicas know (`ConvergenceFuzzer.mixedVersions`): the others keep
/// it as an unknown object, in the collections and references that hold it.
package final class FuzzSticker: FuzzItem {
    @Property package var shine = 0
}
