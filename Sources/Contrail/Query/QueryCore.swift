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
    /// The entry of every object in `tree`, by object, and the reference that keeps the object alive
    /// (entries do not retain theirs).
    private var members: [ObjectIdentifier: Member]
    /// The window's objects, all of the query's class (nil without a window).
    private(set) var shown: [ModelObject]?
    /// The window `shown` holds.
    private var appliedWindow: Range<Int>?
    /// The window asked for (`LiveQuery.window`), applied by the next update.
    var window: Range<Int>?
    /// What the last `update` found, for the façade's delivery.
    var found: QueryChanges?
    /// Whether the last `update` changed the number of matches.
    var totalChanged = false

    private struct Member {
        var entry: Entry
        let object: ModelObject
    }

    /// Indexes the objects of `objects` that `isMember` accepts and `filter` passes. O(n log n).
    init(host: ModelObjectHost, objects: some Sequence<ModelObject>, isMember: (ModelObject) -> Bool,
         filter: @escaping @MainActor (ModelObject) -> Bool, sort: [Criterion], window: Range<Int>?) {
        self.host = host
        self.filter = filter
        firstKey = sort.first?.key
        restKeys = sort.dropFirst().map(\.key)
        firstIsInline = sort.first?.isInline ?? true
        firstIsDescending = sort.first?.isDescending ?? false
        keepsKeys = !firstIsInline || sort.count > 1
        let less = Entry.order(descending: sort.map(\.isDescending), firstIsInline: firstIsInline)
        self.less = less
        var entries: [Entry] = []
        var members: [ObjectIdentifier: Member] = [:]
        for object in objects where isMember(object) && filter(object) {
            let entry = Self.entry(object, firstKey: firstKey, restKeys: restKeys, firstIsInline: firstIsInline,
                                   firstIsDescending: firstIsDescending, keepsKeys: keepsKeys)
            entries.append(entry)
            members[ObjectIdentifier(object)] = Member(entry: entry, object: object)
        }
        entries.sort(by: less)
        tree = OrderStatisticTree(sorted: entries, less: less)
        self.members = members
        self.window = window
        appliedWindow = window
        shown = window.map { tree.elements(in: $0).map(\.object) }
    }

    private static func entry(_ object: ModelObject, firstKey: (@MainActor (ModelObject) -> QueryKeyComponent)?,
                              restKeys: [@MainActor (ModelObject) -> QueryKeyComponent], firstIsInline: Bool, firstIsDescending: Bool,
                              keepsKeys: Bool) -> Entry {
        let first = firstKey?(object) ?? .null
        let keys = keepsKeys ? QueryKeys([first] + restKeys.map { $0(object) }) : nil
        return Entry(first: first, isInline: firstIsInline, descending: firstIsDescending, keys: keys, uuid: object.uuid, object: object)
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
        guard let member = members[ObjectIdentifier(object)] else { return nil }
        return tree.index(of: member.entry)
    }

    // MARK: - Maintenance

    /// One object the update looks at: where it was, where it goes.
    private struct Item {
        let object: ModelObject
        var old: Entry?
        var new: Entry?
        var oldIndex = -1
        var newIndex = -1
    }

    /// The entry `object` has now, or nil when it is not a match.
    private func currentEntry(_ object: ModelObject) -> Entry? {
        guard let host, object.host === host, filter(object) else { return nil }
        return Self.entry(object, firstKey: firstKey, restKeys: restKeys, firstIsInline: firstIsInline, firstIsDescending: firstIsDescending,
                          keepsKeys: keepsKeys)
    }

    private func isSamePlace(_ a: Entry, _ b: Entry) -> Bool { !less(a, b) && !less(b, a) }

    /// Brings the contents up to date with `objects` (all of the query's class) and the window
    /// asked for; returns whether there is something to deliver (`found`, `totalChanged`).
    /// O(k log n) for k objects, plus O(log n + window) when the changes reach the window.
    func update(_ objects: [ModelObject]) -> Bool {
        // Where each object was and goes: O(log n) each, before anything moves.
        var stayed: [Item] = []
        var moving: [Item] = []
        let isSingle = objects.count == 1
        for object in objects {
            var item = Item(object: object, old: members[ObjectIdentifier(object)]?.entry, new: currentEntry(object))
            guard item.old != nil || item.new != nil else { continue }
            if isSingle, let old = item.old, item.new.map({ !isSamePlace(old, $0) }) ?? true {
                // One object that moves: removing and inserting it give its two indices.
                moving.append(item)
                break
            }
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
        let oldShown = shown ?? (windowMoved ? tree.all.map(\.object) : nil)
        // With one object moving and none staying, removing and inserting it give its indices.
        let indexed = moving.count > 1 || !stayed.isEmpty
        for index in moving.indices {
            if let old = moving[index].old {
                guard let at = tree.remove(old) else { preconditionFailure("a query member is missing from its order") }
                if !indexed { moving[index].oldIndex = at }
                members[ObjectIdentifier(moving[index].object)] = nil
            }
        }
        for index in moving.indices {
            if let new = moving[index].new {
                let at = tree.insert(new)
                if !indexed { moving[index].newIndex = at }
                members[ObjectIdentifier(moving[index].object)] = Member(entry: new, object: moving[index].object)
            }
        }
        for index in stayed.indices {
            let new = stayed[index].new!
            members[ObjectIdentifier(stayed[index].object)] = Member(entry: new, object: stayed[index].object)
            stayed[index].newIndex = tree.index(of: new)!
        }
        if indexed {
            for index in moving.indices {
                if let new = moving[index].new { moving[index].newIndex = tree.index(of: new)! }
            }
        }
        totalChanged = tree.count != oldCount
        if let oldShown {
            found = windowChanges(from: oldShown, stayed: stayed, moving: moving, windowMoved: windowMoved)
        } else {
            found = allChanges(stayed: stayed, moving: moving, oldCount: oldCount)
        }
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
        var relocated = Set<ObjectIdentifier>()
        var changed = Set<ObjectIdentifier>()
        for item in moving where item.old != nil && item.new != nil { relocated.insert(ObjectIdentifier(item.object)) }
        for item in stayed { changed.insert(ObjectIdentifier(item.object)) }
        return QueryDiff.changes(from: oldShown, to: newShown, relocated: relocated, changed: changed)
    }
}
