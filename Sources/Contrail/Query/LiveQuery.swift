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
    private let hub: QueryHub
    /// The order, the matches, the window and the changes: not generic, so that what a change runs
    /// through is specialised in this module whatever module `Model` lives in.
    private let core: QueryCore
    private let registrar = ObservationRegistrar()
    private let listeners = ObserverList<QueryChanges>()
    private var buffers: [WeakBuffer] = []

    private struct WeakBuffer {
        weak var buffer: QueryChangeBuffer?
    }

    /// The key paths the registrar tracks, made once: a key path into a generic class is otherwise
    /// instantiated by the runtime at every use.
    private let contentsKeyPath: KeyPath<LiveQuery, Int> = \.observedContents
    private let totalKeyPath: KeyPath<LiveQuery, Int> = \.observedTotal

    /// The part of the sorted matches the collection holds, as offsets into them: `0..<50` is
    /// the first fifty, nil is all of them. Setting it takes effect at the end of the turn,
    /// delivered with changes (the objects that leave and enter), so a list view pages or scrolls by
    /// moving it. O(log n + window) per move.
    public var window: Range<Int>? {
        get { core.window }
        set {
            guard newValue != core.window else { return }
            core.window = newValue
            hub.schedule()
        }
    }

    init(host: ModelObjectHost, hub: QueryHub, objects: some Sequence<ModelObject>, filter: @escaping @MainActor (Model) -> Bool,
         sort: [QuerySort<Model>], window: Range<Int>?) {
        self.hub = hub
        let criteria = sort.map { criterion in
            let key = criterion.key
            return QueryCore.Criterion(key: { key(unsafeDowncast($0, to: Model.self)) }, isDescending: criterion.isDescending,
                                       isInline: criterion.isInline)
        }
        core = QueryCore(host: host, hub: hub, objects: objects, isMember: { $0 is Model }, filter: { filter(unsafeDowncast($0, to: Model.self)) },
                         sort: criteria, window: window)
        hub.add(self, column: core.column)
    }

    isolated deinit {
        hub.queryFreed()
        for weak in buffers { weak.buffer?.finish() }
    }

    // MARK: - The collection

    /// The first index: 0.
    public var startIndex: Int { 0 }

    /// The number of objects shown (in the window, or all matches without one).
    public var endIndex: Int {
        registrar.access(self, keyPath: contentsKeyPath)
        return core.count
    }

    /// The object at `position` of the window (or of all matches). O(1) in a window, O(log n) without.
    public subscript(position: Int) -> Model {
        registrar.access(self, keyPath: contentsKeyPath)
        return unsafeDowncast(core.object(at: position), to: Model.self)
    }

    /// The number of objects that pass the filter, in the window or not (the length of the list a
    /// windowed view scrolls through).
    public var totalCount: Int {
        registrar.access(self, keyPath: totalKeyPath)
        return core.tree.count
    }

    /// The index of `model` among all sorted matches (not the window), or nil when it is not one.
    /// O(log n).
    public func offset(of model: Model) -> Int? {
        registrar.access(self, keyPath: totalKeyPath)
        return core.offset(of: model)
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

    func accepts(_ type: ModelObject.Type) -> Bool { type is Model.Type }

    func update(_ rows: [QueryRow]) -> Bool { core.update(rows) }

    func update(one row: QueryRow) -> Bool { core.update(one: row) }

    func deliver() {
        let found = core.found
        core.found = nil
        if let changes = found, changes.changesOrder {
            registrar.willSet(self, keyPath: contentsKeyPath)
            registrar.didSet(self, keyPath: contentsKeyPath)
        }
        if core.totalChanged {
            core.totalChanged = false
            registrar.willSet(self, keyPath: totalKeyPath)
            registrar.didSet(self, keyPath: totalKeyPath)
        }
        guard let changes = found, !changes.isEmpty else { return }
        listeners.notify(changes)
        buffers.removeAll { $0.buffer == nil }
        for weak in buffers { weak.buffer?.push(changes) }
    }
}

extension LiveQuery: MaintainedQuery {}
