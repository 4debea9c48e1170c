import Foundation
import Observation

/// A filtered, sorted and optionally windowed view of a scope's objects of one class that keeps
/// itself up to date and says what moved (`scope.query(_:where:sortedBy:window:)` opens one).
///
/// ```swift
/// let open = scope.query(Task.self, where: { !$0.done }, sortedBy: .descending(\.created), window: 0..<50)
/// open.onChanges(self) { changes in print(changes.inserted, changes.removed) }   // once per turn
/// for task in open { print(task.title) }
/// ```
/// **What it sees**: every object of `Model` (or a subclass) attached to the scope, wherever it
/// sits in the tree, that passes the filter, ordered by the sort criteria and then by uuid. Objects
/// joining and leaving the scope join and leave the query; a change of an object's properties,
/// local or remote, an undo, a revert or a restore from a log, re-evaluates that object (its
/// filter and its keys), and only that object. A filter or key that reads other objects (through
/// a reference) is evaluated again only when the object itself changes.
///
/// **When it changes**: the contents change once per run-loop turn, at the same point as queued
/// observers (`ChangeDelivery`), together with the changes that describe them: between two
/// deliveries it shows the state of the last one, however many edits, remote batches, rebases or
/// refetches happened since, and never an intermediate state. Every query of the scope is brought
/// up to date before any of them is delivered.
///
/// It is a `RandomAccessCollection` of the window's objects (all of them without a window) and
/// `Observable`: SwiftUI's `ForEach` over it, or `withObservationTracking`, updates when its contents
/// or `totalCount` change. Costs: a change to one object is O(log n) per query that accepts its
/// class (plus O(window) when the window's contents change); `subscript` is O(1) in a window and
/// O(log n) without one.
@MainActor
public final class LiveQuery<Model: ModelObject>: @MainActor RandomAccessCollection, Observable {
    typealias Entry = QueryEntry

    private weak var host: ModelObjectHost?
    private let hub: QueryHub
    private let filter: @MainActor (Model) -> Bool
    private let firstKey: (@MainActor (Model) -> QueryKeyComponent)?
    private let restKeys: [@MainActor (Model) -> QueryKeyComponent]
    private let less: (Entry, Entry) -> Bool
    private var tree: OrderStatisticTree<Entry>
    /// The entry of every object in `tree`, by object.
    private var members: [ObjectIdentifier: Entry]
    /// The window's objects, all of class `Model` (nil without a window).
    private var shown: [ModelObject]?
    /// The window `shown` holds.
    private var appliedWindow: Range<Int>?
    /// What the last `update` found, for `deliver`.
    private var found: QueryChanges?
    private var totalChanged = false
    private let registrar = ObservationRegistrar()
    private let listeners = ObserverList<QueryChanges>()
    private var buffers: [WeakBuffer] = []

    private struct WeakBuffer {
        weak var buffer: QueryChangeBuffer?
    }

    /// The part of the sorted matches the collection holds, as offsets into them: `0..<50` is
    /// the first fifty, nil is all of them. Setting it takes effect at the end of the turn,
    /// delivered with changes (the objects that leave and enter), so a list view pages or scrolls by
    /// moving it. O(log n + window) per move.
    public var window: Range<Int>? {
        didSet {
            if window != oldValue { hub.schedule() }
        }
    }

    init(host: ModelObjectHost, hub: QueryHub, objects: some Sequence<ModelObject>, filter: @escaping @MainActor (Model) -> Bool,
         sort: [QuerySort<Model>], window: Range<Int>?) {
        self.host = host
        self.hub = hub
        self.filter = filter
        firstKey = sort.first?.key
        restKeys = sort.dropFirst().map(\.key)
        let less = Entry.order(descending: sort.map(\.isDescending))
        self.less = less
        var entries: [Entry] = []
        for object in objects {
            guard let model = object as? Model, filter(model) else { continue }
            entries.append(Self.entry(model, firstKey: firstKey, restKeys: restKeys))
        }
        entries.sort(by: less)
        tree = OrderStatisticTree(sorted: entries, less: less)
        members = Dictionary(minimumCapacity: entries.count)
        for entry in entries { members[ObjectIdentifier(entry.object)] = entry }
        self.window = window
        appliedWindow = window
        shown = window.map { tree.elements(in: $0).map(\.object) }
        hub.add(self)
    }

    isolated deinit {
        for weak in buffers { weak.buffer?.finish() }
    }

    private static func entry(_ model: Model, firstKey: (@MainActor (Model) -> QueryKeyComponent)?,
                              restKeys: [@MainActor (Model) -> QueryKeyComponent]) -> Entry {
        Entry(first: firstKey?(model) ?? .null, rest: restKeys.map { $0(model) }, uuid: model.uuid, object: model)
    }

    // MARK: - The collection

    /// The first index: 0.
    public var startIndex: Int { 0 }

    /// The number of objects shown (in the window, or all matches without one).
    public var endIndex: Int {
        registrar.access(self, keyPath: \.observedContents)
        return shown?.count ?? tree.count
    }

    /// The object at `position` of the window (or of all matches). O(1) in a window, O(log n) without.
    public subscript(position: Int) -> Model {
        registrar.access(self, keyPath: \.observedContents)
        if let shown { return unsafeDowncast(shown[position], to: Model.self) }
        return unsafeDowncast(tree[position].object, to: Model.self)
    }

    /// The number of objects that pass the filter, in the window or not (the length of the list a
    /// windowed view scrolls through).
    public var totalCount: Int {
        registrar.access(self, keyPath: \.observedTotal)
        return tree.count
    }

    /// The index of `model` among all sorted matches (not the window), or nil when it is not one.
    /// O(log n).
    public func offset(of model: Model) -> Int? {
        registrar.access(self, keyPath: \.observedTotal)
        guard let entry = members[ObjectIdentifier(model)] else { return nil }
        return tree.index(of: entry)
    }

    /// The stand-ins the registrar tracks the contents and the total under.
    private nonisolated var observedContents: Int { 0 }
    private nonisolated var observedTotal: Int { 0 }

    // MARK: - Changes

    /// Calls `body` with the changes of each delivery that changed the contents (once per turn at
    /// most), after the contents changed. Observers are held weakly, as everywhere in Contrail.
    @discardableResult
    public func onChanges(_ observer: AnyObject, _ body: @escaping @MainActor (QueryChanges) -> Void) -> ObservationToken {
        listeners.add(observer, body)
    }

    /// The changes from now on, as an `AsyncSequence` read on the main actor. Each element
    /// describes the contents as they are when the consumer receives it: when a consumer falls
    /// behind by more than one delivery, what it missed comes as one `QueryChanges.replacingAll`
    /// (only updates in place are merged). The sequence ends when the query is freed or the
    /// consumer's task is cancelled.
    public func changes() -> QueryChangeSequence {
        let buffer = QueryChangeBuffer()
        buffers.removeAll { $0.buffer == nil }
        buffers.append(WeakBuffer(buffer: buffer))
        return QueryChangeSequence(buffer: buffer)
    }

    // MARK: - Maintenance

    /// One object the update looks at: where it was, where it goes.
    private struct Item {
        let object: Model
        var old: Entry?
        var new: Entry?
        var oldIndex = -1
        var newIndex = -1
    }

    /// The entry `model` has now, or nil when it is not a match.
    private func currentEntry(_ model: Model) -> Entry? {
        guard let host, model.host === host, filter(model) else { return nil }
        return Self.entry(model, firstKey: firstKey, restKeys: restKeys)
    }

    private func isSamePlace(_ a: Entry, _ b: Entry) -> Bool { !less(a, b) && !less(b, a) }

    func accepts(_ type: ModelObject.Type) -> Bool { type is Model.Type }

    func update(_ objects: [ModelObject]) -> Bool {
        // Where each object was and goes: O(log n) each, before anything moves.
        var stayed: [Item] = []
        var moving: [Item] = []
        for object in objects {
            guard let model = object as? Model else { continue }
            var item = Item(object: model, old: members[ObjectIdentifier(model)], new: currentEntry(model))
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
        let oldShown = shown ?? (windowMoved ? tree.all.map(\.object) : nil)
        for item in moving {
            if let old = item.old {
                tree.remove(old)
                members[ObjectIdentifier(item.object)] = nil
            }
        }
        for item in moving {
            if let new = item.new {
                tree.insert(new)
                members[ObjectIdentifier(item.object)] = new
            }
        }
        for index in stayed.indices {
            let new = stayed[index].new!
            members[ObjectIdentifier(stayed[index].object)] = new
            stayed[index].newIndex = tree.index(of: new)!
        }
        for index in moving.indices {
            if let new = moving[index].new { moving[index].newIndex = tree.index(of: new)! }
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

    func deliver() {
        guard let changes = found else { return }
        found = nil
        if changes.changesOrder {
            registrar.willSet(self, keyPath: \.observedContents)
            registrar.didSet(self, keyPath: \.observedContents)
        }
        if totalChanged {
            totalChanged = false
            registrar.willSet(self, keyPath: \.observedTotal)
            registrar.didSet(self, keyPath: \.observedTotal)
        }
        guard !changes.isEmpty else { return }
        listeners.notify(changes)
        buffers.removeAll { $0.buffer == nil }
        for weak in buffers { weak.buffer?.push(changes) }
    }
}

extension LiveQuery: MaintainedQuery {}
