import Contrail
import Foundation

/// One client of a convergence run: its scope and board, the connector the fuzzer cuts, and what
/// the fuzzer remembers of its local edits.
@MainActor
final class FuzzReplica {
    let index: Int
    let scope: Scope
    let board: FuzzBoard
    let connector: FuzzConnector
    let client: Client
    /// Nested `pauseIncoming` calls not yet resumed by the fuzzer.
    var pauses = 0
    /// Change sets that added objects this replica created, by object.
    private(set) var adds: [UUID: ChangeSet] = [:]
    /// The single-reference keys (`pinned`, `link`) its local change sets wrote, by change set.
    private(set) var referenceWrites: [(key: FuzzLink.Key, changeSet: ChangeSet)] = []
    private var token: ObservationToken?

    init(index: Int, connector: FuzzConnector, options: ClientOptions) {
        self.index = index
        self.connector = connector
        scope = Scope(name: ConvergenceFuzzer.scopeName)
        board = FuzzBoard()
        scope.root = board
        client = Client(connector: connector, options: options)
        token = scope.onChanges(self) { [weak self] changeSet in
            guard let self, changeSet.origin == .local else { return }
            for fragment in changeSet.fragments {
                if fragment.kind == .add { self.adds[fragment.uuid] = changeSet }
                for name in FuzzLink.singleReferences where fragment.kind == .change && fragment.properties[name] != nil {
                    self.referenceWrites.append((FuzzLink.Key(parent: fragment.uuid, property: name), changeSet))
                }
            }
        }
    }

    var session: Session? { client.session }

    /// Ends every pause the fuzzer made (pauses nest: one resume per pause).
    func resumeAll() {
        while pauses > 0 {
            pauses -= 1
            session?.resumeIncoming()
        }
    }

    /// Items of list 0 (`items`) or 1 (`shelf`).
    func list(_ list: Int) -> [FuzzItem] { list % 2 == 0 ? board.items : board.shelf }

    func setList(_ list: Int, _ items: [FuzzItem]) {
        if list % 2 == 0 { board.items = items } else { board.shelf = items }
    }

    /// The item at `position` (modulo the count) of a list, if the list has any.
    func item(_ list: Int, _ position: Int) -> FuzzItem? {
        let items = self.list(list)
        return items.isEmpty ? nil : items[position % items.count]
    }

    /// Every link from an object to an item or note reachable from the board, as (parent, property, child).
    func links() -> Set<FuzzLink> {
        var links = Set<FuzzLink>()
        var seen = Set<UUID>()
        var stack: [FuzzItem] = []
        func link(_ parent: ModelObject, _ key: String, _ child: ModelObject) {
            links.insert(FuzzLink(parent: parent.uuid, property: key, child: child.uuid))
        }
        for item in board.items { link(board, "items", item); stack.append(item) }
        for item in board.shelf { link(board, "shelf", item); stack.append(item) }
        if let pinned = board.pinned { link(board, "pinned", pinned); stack.append(pinned) }
        while let item = stack.popLast() {
            guard seen.insert(item.uuid).inserted else { continue }
            for note in item.notes { link(item, "notes", note) }
            if let target = item.link { link(item, "link", target); stack.append(target) }
        }
        return links
    }

    /// The objects an edit unlinked somewhere from a parent that stays (the board, or an object
    /// still linked). Even when the same edit links them elsewhere (a move), another client's
    /// concurrent edit may drop that other link, and then the object is rightly gone. Objects that
    /// left only with their parent are not counted: they are gone only while the parent is.
    static func unlinked(before: Set<FuzzLink>, after: Set<FuzzLink>, root: UUID) -> Set<UUID> {
        let linked = Set(after.map(\.child))
        return Set(before.subtracting(after).filter { $0.parent == root || linked.contains($0.parent) }.map(\.child))
    }
}

/// A link from a parent's property to a child, by UUID.
struct FuzzLink: Hashable {
    let parent: UUID
    let property: String
    let child: UUID

    /// A parent's property.
    struct Key: Hashable {
        let parent: UUID
        let property: String
    }

    /// The properties that hold one reference: a concurrent write replaces it (the last write wins).
    static let singleReferences = ["pinned", "link"]
}
