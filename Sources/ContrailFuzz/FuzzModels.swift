import Contrail
import Foundation

/// The fuzzer's root: scalars, two collections that items move between, a reference, and a shared
/// text and counter (edited only with `ConvergenceFuzzer.sharedValues`).
package final class FuzzBoard: ModelObject {
    @Property package var title = ""
    @Property package var score = 0
    @Property package var note = SharedText()
    @Property package var likes = SharedCounter()
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

/// An item with a shared text: a deleted card that comes back keeps its text's characters
/// (`ResurrectionTests`).
package final class FuzzCard: FuzzItem {
    @Property package var body = SharedText()
}
