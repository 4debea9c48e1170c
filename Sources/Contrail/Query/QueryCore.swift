import Foundation

/// The part of a live query that is not generic: its order, its matches, its window and the
/// changes an update finds. `LiveQuery<Model>` is a thin typed façade over it. The app's model
/// types live in the app's module, where the library's generic code would run unspecialised
/// (dictionaries, arrays and locals of generic types handled through metadata at every use), so
/// everything a change passes through works on `ModelObject`, `ObjectIdentifier` and plain
/// entries, and the model's type appears only in the closures that read it.
@MainActor
final class QueryCore {
    typealias Entry = QueryEntry

    /// The sort criteria of a query without its model type.
    struct Criterion {
        let key: @MainActor (ModelObject) -> QueryKeyComponent
        let isDescending: Bool
        let isInline: Bool
    }

    private weak var host: ModelObjectHost?
    /// The hub that numbers the objects (`QueryRow`) and keeps this query's slots in `column`.
    private let hub: QueryHub
    /// This query's column of the hub's slots: the entry of every object in `tree` without its uuid
    /// (which the row holds).
    let column: Int
    /// The filter, over objects of the query's class.
    private let filter: @MainActor (ModelObject) -> Bool
    private let firstKey: (@MainActor (ModelObject) -> QueryKeyComponent)?
    private let restKeys: [@MainActor (ModelObject) -> QueryKeyComponent]
    /// How the first key is encoded in an entry (`QueryKeyComponent.encoded`).
    private let firstIsInline: Bool
    private let firstIsDescending: Bool
    /// Whether entries carry all their keys (`QueryEntry.keys`): the order needs more than the first.
    private let keepsKeys: Bool
    private let less: (Entry, Entry) -> Bool
    private(set) var tree: OrderStatisticTree<Entry>
    /// The sort keys of every object in `tree`, by row number, when entries carry them (`keepsKeys`);
    /// shorter than the hub's rows until a later row holds a match. Not checked for exclusive
    /// access at run time: only this query's methods touch it, on the main actor, and none holds
    /// an access across another.
    @exclusivity(unchecked) private var slotKeys: [QueryKeys?]
    /// The window's objects, all of the query's class (nil without a window).
    private(set) var shown: [ModelObject]?
    /// The window `shown` holds.
    private var appliedWindow: Range<Int>?
    /// The entry of `shown`'s last object, once asked for (`isPastWindow`); nil when `shown` changed since.
    private var lastShown: Entry?
    /// The window asked for (`LiveQuery.window`), applied by the next update.
    var window: Range<Int>?
    /// What the last `update` found, for the façade's delivery.
    var found: QueryChanges?
    /// Whether the last `update` changed the number of matches.
    var totalChanged = false

    /// Indexes the objects of `objects` that `isMember` accepts and `filter` passes, numbering them
    /// in `hub`. O(n log n).
    init(host: ModelObjectHost, hub: QueryHub, objects: some Sequence<ModelObject>, isMember: (ModelObject) -> Bool,
         filter: @escaping @MainActor (ModelObject) -> Bool, sort: [Criterion], window: Range<Int>?) {
        self.host = host
        self.hub = hub
        column = hub.openColumn()
        self.filter = filter
        firstKey = sort.first?.key
        restKeys = sort.dropFirst().map(\.key)
        firstIsInline = sort.first?.isInline ?? true
        firstIsDescending = sort.first?.isDescending ?? false
        keepsKeys = !firstIsInline || sort.count > 1
        let less = Entry.order(descending: sort.map(\.isDescending), firstIsInline: firstIsInline)
        self.less = less
        var entries: [Entry] = []
        var rows: [Int] = []
        for object in objects where isMember(object) && filter(object) {
            let row = hub.row(for: object)
            entries.append(Self.entry(row, firstKey: firstKey, restKeys: restKeys, firstIsInline: firstIsInline,
                                      firstIsDescending: firstIsDescending, keepsKeys: keepsKeys))
            rows.append(row.index)
        }
        var slotKeys: [QueryKeys?] = keepsKeys ? Array(repeating: nil, count: hub.rowCount) : []
        for (entry, row) in zip(entries, rows) {
            hub.setSlot(QuerySlot(key: entry.key, tag: entry.tag), row: row, column: column)
            if keepsKeys { slotKeys[row] = entry.keys }
        }
        self.slotKeys = slotKeys
        entries.sort(by: less)
        tree = OrderStatisticTree(sorted: entries, capacity: 32, less: less, prefix: Entry.prefix)
        self.window = window
        appliedWindow = window
        shown = window.map { tree.elements(in: $0).map(\.object) }
    }

    private static func entry(_ row: QueryRow, firstKey: (@MainActor (ModelObject) -> QueryKeyComponent)?,
                              restKeys: [@MainActor (ModelObject) -> QueryKeyComponent], firstIsInline: Bool, firstIsDescending: Bool,
                              keepsKeys: Bool) -> Entry {
        let first = firstKey?(row.object) ?? .null
        let keys = keepsKeys ? QueryKeys([first] + restKeys.map { $0(row.object) }) : nil
        return Entry(first: first, isInline: firstIsInline, descending: firstIsDescending, keys: keys, row: row)
    }

    /// The entry `row`'s object has in `tree`, or nil when it is not a match. O(1).
    private func entry(at row: QueryRow) -> Entry? {
        let slot = hub.slot(row: row.index, column: column)
        guard slot.isMatch else { return nil }
        return Entry(key: slot.key, tag: slot.tag, keys: keepsKeys ? slotKeys[row.index] : nil, row: row)
    }

    /// Keeps `entry` (nil: not a match) as the entry of `row`'s object. O(1), amortised.
    private func store(_ entry: Entry?, at row: QueryRow) {
        hub.setSlot(entry.map { QuerySlot(key: $0.key, tag: $0.tag) } ?? .none, row: row.index, column: column)
        guard keepsKeys else { return }
        if row.index >= slotKeys.count {
            guard entry != nil else { return }
            slotKeys.append(contentsOf: repeatElement(nil, count: max(hub.rowCount, row.index + 1) - slotKeys.count))
        }
        slotKeys[row.index] = entry?.keys
    }

    /// The number of objects shown (in the window, or all matches without one).
    var count: Int { shown?.count ?? tree.count }

    /// The object at `position` of the window (or of all matches). O(1) in a window, O(log n) without.
    func object(at position: Int) -> ModelObject {
        if let shown { return shown[position] }
        return tree[position].object
    }

    /// The index of `object` among all sorted matches, or nil when it is not one. O(log n).
    func offset(of object: ModelObject) -> Int? {
        guard let row = hub.existingRow(of: object), let entry = entry(at: row) else { return nil }
        return tree.index(of: entry)
    }

    // MARK: - Maintenance

    /// One object the update looks at: where it was, where it goes.
    private struct Item {
        let row: QueryRow
        var old: Entry?
        var new: Entry?
        var oldIndex = -1
        var newIndex = -1
    }

    /// The entry `object` has now, or nil when it is not a match.
    private func currentEntry(_ row: QueryRow) -> Entry? {
        guard let host, row.object.host === host, filter(row.object) else { return nil }
        return Self.entry(row, firstKey: firstKey, restKeys: restKeys, firstIsInline: firstIsInline, firstIsDescending: firstIsDescending,
                          keepsKeys: keepsKeys)
    }

    private func isSamePlace(_ a: Entry, _ b: Entry) -> Bool { !less(a, b) && !less(b, a) }

    /// Brings the contents up to date with `objects` (all of the query's class) and the window
    /// asked for; returns whether there is something to deliver (`found`, `totalChanged`).
    /// O(k log n) for k objects, plus O(log n + window) when the changes reach the window.
    func update(_ rows: [QueryRow]) -> Bool {
        if rows.count == 1, window == appliedWindow { return updateOne(rows[0]) }
        // Where each object was and goes: O(log n) each, before anything moves.
        var stayed: [Item] = []
        var moving: [Item] = []
        for row in rows {
            var item = Item(row: row, old: entry(at: row), new: currentEntry(row))
            guard item.old != nil || item.new != nil else { continue }
            if let old = item.old {
                guard let index = tree.index(of: old) else { preconditionFailure("a query member is missing from its order") }
                item.oldIndex = index
            }
            if let old = item.old, let new = item.new, isSamePlace(old, new) {
                item.newIndex = -2  // resolved below, once the others have moved
                stayed.append(item)
            } else {
                moving.append(item)
            }
        }
        let windowMoved = window != appliedWindow
        guard !stayed.isEmpty || !moving.isEmpty || windowMoved else { return false }
        let oldCount = tree.count
        // With one object moving and none staying, removing and inserting it give its indices, and
        // the window is edited in place.
        let indexed = moving.count > 1 || !stayed.isEmpty
        let editsWindow = !indexed && !windowMoved && shown != nil
        let oldShown = editsWindow ? nil : shown ?? (windowMoved ? tree.all.map(\.object) : nil)
        for index in moving.indices {
            if let old = moving[index].old {
                guard let at = tree.remove(old) else { preconditionFailure("a query member is missing from its order") }
                if !indexed { moving[index].oldIndex = at }
                if moving[index].new == nil { store(nil, at: moving[index].row) }
            }
        }
        for index in moving.indices {
            if let new = moving[index].new {
                let at = tree.insert(new)
                if !indexed { moving[index].newIndex = at }
                store(new, at: moving[index].row)
            }
        }
        for index in stayed.indices {
            let new = stayed[index].new!
            if keepsKeys { store(new, at: stayed[index].row) }
            stayed[index].newIndex = tree.index(of: new)!
        }
        if indexed {
            for index in moving.indices {
                if let new = moving[index].new { moving[index].newIndex = tree.index(of: new)! }
            }
        }
        totalChanged = tree.count != oldCount
        if editsWindow {
            found = editWindow(moving[0], oldCount: oldCount)
        } else if let oldShown {
            found = windowChanges(from: oldShown, stayed: stayed, moving: moving, windowMoved: windowMoved)
        } else {
            found = allChanges(stayed: stayed, moving: moving, oldCount: oldCount)
        }
        return found?.isEmpty == false || totalChanged
    }

    /// `update` for one object: the common turn.
    func update(one row: QueryRow) -> Bool {
        window == appliedWindow ? updateOne(row) : update([row])
    }

    /// `update` for the common turn: one object changed and the window stayed. No lookup (the
    /// object's slot is at its row), no arrays: in place, it is looked up in the tree only when the
    /// window may show it; moved, removing and inserting it give its two indices, and the window is
    /// edited only when one of them lies before the window's end. O(log n), plus O(window) when the
    /// window changes.
    private func updateOne(_ row: QueryRow) -> Bool {
        let old = entry(at: row)
        let new = currentEntry(row)
        totalChanged = false
        found = nil
        if let old, let new, isSamePlace(old, new) {
            if keepsKeys { store(new, at: row) }
            // In place past the window's end: nothing shows it.
            if isPastWindow(old) { return false }
            guard let index = tree.index(of: old) else { preconditionFailure("a query member is missing from its order") }
            let shownRange = shown == nil ? 0..<tree.count : appliedWindow ?? 0..<tree.count
            guard shownRange.contains(index) else { return false }
            var result = QueryChanges(oldCount: count, newCount: count)
            result.updated.insert(index - shownRange.lowerBound)
            found = result
            return true
        }
        guard old != nil || new != nil else { return false }
        let oldCount = tree.count
        var item = Item(row: row, old: old, new: new)
        if let old {
            guard let at = tree.remove(old) else { preconditionFailure("a query member is missing from its order") }
            item.oldIndex = at
        }
        if let new { item.newIndex = tree.insert(new) }
        store(new, at: row)
        totalChanged = tree.count != oldCount
        guard shown != nil, let end = appliedWindow?.upperBound else {
            found = allChanges(stayed: [], moving: [item], oldCount: oldCount)
            return found?.isEmpty == false || totalChanged
        }
        // Both places past the window's end: the window shows what it showed.
        guard (old != nil && item.oldIndex < end) || (new != nil && item.newIndex < end) else { return totalChanged }
        found = editWindow(item, oldCount: oldCount)
        return found?.isEmpty == false || totalChanged
    }

    /// The changes of a query without a window: every index is an index of the whole list.
    private func allChanges(stayed: [Item], moving: [Item], oldCount: Int) -> QueryChanges {
        var result = QueryChanges(oldCount: oldCount, newCount: tree.count)
        for item in stayed { result.updated.insert(item.oldIndex) }
        var candidates: [(old: Int, new: Int)] = []
        var oldUnstable: [Int] = []
        var newUnstable: [Int] = []
        for item in moving {
            if item.old != nil { oldUnstable.append(item.oldIndex) }
            if item.new != nil { newUnstable.append(item.newIndex) }
            switch (item.old != nil, item.new != nil) {
            case (true, true): candidates.append((item.oldIndex, item.newIndex))
            case (true, false): result.removed.insert(item.oldIndex)
            default: result.inserted.insert(item.newIndex)
            }
        }
        oldUnstable.sort()
        newUnstable.sort()
        QueryDiff.resolve(candidates, oldUnstable: oldUnstable, newUnstable: newUnstable, into: &result)
        return result
    }

    /// The changes of a windowed query (or one whose window moved): when no object left or joined
    /// before the window's end, only updates inside it; otherwise the window is read again and
    /// compared with what it showed. O(changed) or O(log n + window).
    private func windowChanges(from oldShown: [ModelObject], stayed: [Item], moving: [Item], windowMoved: Bool) -> QueryChanges {
        let end = appliedWindow?.upperBound ?? Int.max
        let reachesWindow = windowMoved || moving.contains { item in
            (item.old != nil && item.oldIndex < end) || (item.new != nil && item.newIndex < end)
        }
        guard reachesWindow else {
            var result = QueryChanges(oldCount: oldShown.count, newCount: oldShown.count)
            let start = appliedWindow?.lowerBound ?? 0
            for item in stayed where item.oldIndex >= start && item.oldIndex < end {
                result.updated.insert(item.oldIndex - start)
            }
            return result
        }
        appliedWindow = window
        let newShown = window.map { tree.elements(in: $0).map(\.object) } ?? tree.all.map(\.object)
        shown = window == nil ? nil : newShown
        lastShown = nil
        var relocated = Set<ObjectIdentifier>()
        var changed = Set<ObjectIdentifier>()
        for item in moving where item.old != nil && item.new != nil { relocated.insert(ObjectIdentifier(item.row.object)) }
        for item in stayed { changed.insert(ObjectIdentifier(item.row.object)) }
        return QueryDiff.changes(from: oldShown, to: newShown, relocated: relocated, changed: changed)
    }

    /// Whether `entry` sorts after the last object of a full window (its index is past the window's
    /// end), or the window shows nothing: a change in place there shows nowhere. O(1) mostly.
    private func isPastWindow(_ entry: Entry) -> Bool {
        guard let shown, let window = appliedWindow, window == self.window else { return false }
        guard !shown.isEmpty else { return true }
        guard shown.count == window.count else { return false }
        let lastEntry = lastShown ?? tree[window.upperBound - 1]
        assert(lastEntry.object === shown.last, "a window's last object is the tree's at the window's end")
        lastShown = lastEntry
        return less(lastEntry, entry)
    }

    /// The changes of a windowed query when one object moved (`item`, with its old and new index,
    /// either absent when it left or joined) and the window stayed: `shown` is edited in place (at
    /// most one object leaves or joins at each end, and the moved object), with the objects that
    /// enter read from the tree, and the changes are found on positions, as `QueryDiff.changes`
    /// would find them. O(window).
    private func editWindow(_ item: Item, oldCount: Int) -> QueryChanges {
        guard var list = shown, let window = appliedWindow else { preconditionFailure("a window to edit") }
        shown = nil  // `list` is the only reference: the edits below do not copy it
        let oldLength = list.count
        // Each position of the new window holds the old position of its object, or -1 for an object
        // the window did not show.
        var origins = Array(list.indices)
        var fills: [Int] = []
        let start = window.lowerBound
        let end = window.upperBound
        func edit(_ change: (inout [ModelObject]) -> Void, _ changeOrigin: (inout [Int]) -> Void, _ moveFills: (Int) -> Int?) {
            change(&list)
            changeOrigin(&origins)
            fills = fills.compactMap(moveFills)
        }
        // The object leaves its old place (a window that showed nothing stays empty): the window over
        // the rest starts one later when it was before the window, and the object after the window's
        // end (if any) enters at the end.
        var itemOrigin = -1
        if item.old != nil, item.oldIndex < end, !list.isEmpty {
            if item.oldIndex < start {
                edit({ $0.removeFirst() }, { $0.removeFirst() }, { $0 > 0 ? $0 - 1 : nil })
            } else {
                let at = item.oldIndex - start
                itemOrigin = origins[at]
                edit({ $0.remove(at: at) }, { $0.remove(at: at) }, { $0 > at ? $0 - 1 : ($0 == at ? nil : $0) })
            }
            if end < oldCount {
                edit({ $0.append(item.row.object) }, { $0.append(-1) }, { $0 })
                fills.append(list.count - 1)
            }
        }
        // The object takes its new place: before the window, the object before the window's start
        // enters at the front; inside it, the object itself; the last one is pushed out.
        let count = tree.count
        var itemAt = -1
        if item.new != nil, item.newIndex < end {
            if item.newIndex < start {
                if count > start {
                    edit({ $0.insert(item.row.object, at: 0) }, { $0.insert(-1, at: 0) }, { $0 + 1 })
                    fills.append(0)
                }
            } else {
                itemAt = item.newIndex - start
                edit({ $0.insert(item.row.object, at: itemAt) }, { $0.insert(itemOrigin, at: itemAt) }, { $0 >= itemAt ? $0 + 1 : $0 })
            }
            if list.count > window.count {
                let last = list.count - 1
                if itemAt == last { itemAt = -1 }
                edit({ $0.removeLast() }, { $0.removeLast() }, { $0 == last ? nil : $0 })
            }
        }
        for position in fills { list[position] = tree[start + position].object }
        shown = list
        lastShown = nil
        // Every object shown before and after but the moved one kept its order among the others.
        var result = QueryChanges(oldCount: oldLength, newCount: list.count)
        var kept = Array(repeating: false, count: oldLength)
        var newUnstable: [Int] = []
        for (position, origin) in origins.enumerated() {
            if origin >= 0 {
                kept[origin] = true
            } else {
                result.inserted.insert(position)
                newUnstable.append(position)
            }
        }
        var oldUnstable: [Int] = []
        for (position, isKept) in kept.enumerated() where !isKept {
            result.removed.insert(position)
            oldUnstable.append(position)
        }
        guard itemOrigin >= 0, itemAt >= 0 else { return result }
        oldUnstable.insert(itemOrigin, at: QueryDiff.countLess(than: itemOrigin, in: oldUnstable))
        newUnstable.insert(itemAt, at: QueryDiff.countLess(than: itemAt, in: newUnstable))
        QueryDiff.resolve([(itemOrigin, itemAt)], oldUnstable: oldUnstable, newUnstable: newUnstable, into: &result)
        return result
    }
}
