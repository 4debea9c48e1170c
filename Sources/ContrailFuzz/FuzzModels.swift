import Contrail
import Foundation

/// The fuzzer's root: scalars, two collections that items move between, and a reference.
public final class FuzzBoard: ModelObject {
    @Property public var title = ""
    @Property public var score = 0
    @Property public var items: [FuzzItem] = []
    @Property public var shelf: [FuzzItem] = []
    @Property public var pinned: FuzzItem?
}

/// An item: scalars, a nested collection of notes, and a reference to another item.
public final class FuzzItem: ModelObject {
    @Property public var label = ""
    @Property public var votes = 0
    @Property public var notes: [FuzzNote] = []
    @Property public var link: FuzzItem?
}

/// A note nested in an item.
public final class FuzzNote: ModelObject {
    @Property public var text = ""
}
