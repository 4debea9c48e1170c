import ContrailSupport
import Foundation
import Observation

/// The base class of every model: subclass it and declare properties with `@Property`.
///
/// ```swift
/// final class Shape: ModelObject {
///     @Property var x: Double = 0
///     @Property var color = ModelColor.red
/// }
/// final class Canvas: ModelObject {
///     @Property var name: String?
///     @Property var shapes: [Shape] = []
/// }
/// ```
/// A model is identified by its `uuid` (remote objects keep theirs), which is also its `id`
/// (`Identifiable`). Subclasses that declare their own designated initialiser must also implement
/// `required init(uuid:)`, which Contrail uses to create objects that arrive from elsewhere.
///
/// A model is `Observable`: reading a `@Property` inside `withObservationTracking` (or a SwiftUI
/// view's `body`) registers the read, and any change of it, local or remote, undo or revert, fires
/// the tracking once, as for an `@Observable` class.
@MainActor
open class ModelObject: @MainActor Identifiable, Observable {
    /// The object's identity across replicas: the same on every replica of the object.
    ///
    /// An object made with `init()` gets a random one when it is first asked for (an object nobody
    /// asks stores none). The one exception to "never changes": when a fetch (or a fragment log)
    /// gives the scope a root whose uuid differs from the local root's, the local root takes over
    /// the server's uuid, and `id` with it; every other object keeps its uuid for life.
    public internal(set) var uuid: UUID {
        get { tracking.uuid }
        set { tracking.uuid = newValue }
    }

    /// Tree membership, observers, identity; nil while the object has none of them (the fast path).
    /// Only ever touched on the main actor and never across a suspension or an inout access, so
    /// the dynamic exclusivity check every set would otherwise pay is left out.
    @exclusivity(unchecked) @usableFromInline final var _tracking: ModelTracking?

    /// The `uuid` `init()` passes: "make one when first asked for". Random, so no real object has it.
    nonisolated static let unassignedUUID = UUID(uuidString: "9B2F8E0C-5D4A-4C61-8E7B-3F1A6D2C9E54")!

    /// Creates an object with identity `uuid` (how objects that arrive from elsewhere keep theirs).
    public required init(uuid: UUID) {
        if uuid != ModelObject.unassignedUUID, !ModelClassInfo.isBuildingProbe { tracking.uuid = uuid }
        if _isRecordingPropertyOptions { PropertyOptionsRecorder.objectFinished(type(of: self)) }
    }

    /// Creates an object with a new identity.
    public convenience init() {
        self.init(uuid: ModelObject.unassignedUUID)
    }

    /// The object's identity for `Identifiable` and SwiftUI: its `uuid`.
    public var id: UUID { uuid }

    /// The class name used on the wire: the bare Swift class name.
    open class var className: String {
        let name = String(describing: self)
        return name.split(separator: ".").last.map(String.init) ?? name
    }

    /// Computed properties whose observers fire when a dependency changes.
    open class var compositeProperties: [CompositeProperty] { [] }

    /// The wire names the class had in earlier versions of the app: fragments and fragment logs
    /// that name one are read as this class, which is written under `className` from then on.
    open class var previousWireNames: [String] { [] }

    /// Earlier wire names of properties, by the property's current name (`["color": ["colour"]]`):
    /// a value stored or sent under an earlier name is read into the property.
    open class var previousPropertyWireNames: [String: [String]] { [:] }

    /// The version of the shape of the class's values, raised when a property's values change shape
    /// (a `String` that becomes `[String]`). A fragment log records it with the objects it holds: an
    /// older version's values go through the class's `ModelMigration.migrate(_:from:)` when restored,
    /// and a log written by a newer version is refused (`FragmentLogError.newerModel`), never applied in part.
    open class var modelVersion: Int { 0 }

    /// The wire name of the object's class.
    public var className: String { info.className }

    /// The host (the scope) the object is attached to, if any.
    var host: ModelObjectHost? { _tracking?.host }

    /// Every place the object is held: parent and property name. A model may sit under several
    /// parents and keys at once.
    public var parents: [(parent: ModelObject, key: String)] {
        guard let tracking = _tracking else { return [] }
        return tracking.parents.compactMap { link in
            link.parent.map { ($0, $0.tracking.info.properties[link.property].name) }
        }
    }

    /// The model objects this object holds through its reference and collection properties.
    public var childObjects: [ModelObject] {
        info.properties.flatMap { $0.storage.models(in: self, offset: $0.offset) }
    }

    /// The objects this one holds through synced properties: what makes objects scope members.
    /// Objects reachable only through `@Property(local: true)` stay out of the scope (and off the wire).
    /// Allocates nothing for an object without synced references (a tree walk visits every leaf).
    var syncedChildObjects: [ModelObject] {
        var children: [ModelObject] = []
        for property in info.properties where property.isSynced && property.valueKind != .value {
            children += property.storage.models(in: self, offset: property.offset)
        }
        return children
    }

    /// The names of the synced (non-local) properties, in declaration order.
    public var syncedPropertyNames: [String] {
        info.properties.filter(\.isSynced).map(\.name)
    }

    // MARK: - Internals shared with the host and observation

    var info: ModelClassInfo { _tracking?.info ?? ModelClassInfo.of(type(of: self)) }

    /// The tracking record, created on first need. Creating it links the children the object
    /// already holds (set by property defaults or initialisers, which bypass the setter).
    var tracking: ModelTracking {
        _tracking ?? makeTracking()
    }

    /// Creates the tracking record and links the children held now. When property `changed` was
    /// just set, its previous models `previous` are linked instead of the new ones, so that the
    /// change itself relinks them.
    private func makeTracking(changed: Int? = nil, previous: [ModelObject] = []) -> ModelTracking {
        let tracking = ModelTracking()
        tracking.info = ModelClassInfo.of(type(of: self))
        _tracking = tracking
        for property in tracking.info.properties where property.valueKind != .value {
            let models = property.index == changed ? previous : property.storage.models(in: self, offset: property.offset)
            for child in models {
                child.tracking.parents.append(ParentLink(parent: self, property: property.index))
            }
        }
        return tracking
    }

    /// The slow path of a property set: resolves the property from its storage offset, then
    /// `_didChange`. This is where an app module's setter enters the framework unspecialised, so
    /// the common value types are sent on to code specialised for them (the compares fold away
    /// there): no generic dispatch per set for them.
    @usableFromInline
    final func _propertyDidSet<Value: ModelValue>(storageOffset: Int, old: Value, new: Value) {
        if Value.self == Double.self {
            propertyDidSet(storageOffset: storageOffset, old: unsafeBitCast(old, to: Double.self), new: unsafeBitCast(new, to: Double.self))
        } else if Value.self == Int.self {
            propertyDidSet(storageOffset: storageOffset, old: unsafeBitCast(old, to: Int.self), new: unsafeBitCast(new, to: Int.self))
        } else if Value.self == Bool.self {
            propertyDidSet(storageOffset: storageOffset, old: unsafeBitCast(old, to: Bool.self), new: unsafeBitCast(new, to: Bool.self))
        } else if Value.self == String.self {
            propertyDidSet(storageOffset: storageOffset, old: unsafeBitCast(old, to: String.self), new: unsafeBitCast(new, to: String.self))
        } else {
            propertyDidSet(storageOffset: storageOffset, old: old, new: new)
        }
    }

    @inline(__always)
    private func propertyDidSet<Value: ModelValue>(storageOffset: Int, old: Value, new: Value) {
        if let tracking = _tracking {
            guard let index = tracking.info.index(forOffset: storageOffset) else { return }
            _didChange(index: index, old: old, new: new)
            return
        }
        guard !ModelClassInfo.isBuildingProbe, let index = info.index(forOffset: storageOffset) else { return }
        _didChange(index: index, old: old, new: new)
    }

    /// A property changed from `old` to `new` (already stored): update the tree, notify, record.
    final func _didChange<Value: ModelValue>(index: Int, old: Value, new: Value) {
        let tracking = _tracking ?? makeTracking(changed: index, previous: old.models)
        if tracking.isProbe {
            ModelClassInfo.probedIndex = index
            return
        }
        guard !Value.isSame(old, new) else { return }
        if Value.valueKind != .value,
           let refusal = relink(property: index, from: old.models, to: new.models, isCollection: Value.valueKind == .collection) {
            // Refused: the property keeps its value, as if the set had not happened.
            let property = tracking.info.properties[index]
            property.storage.restore(old, in: self, offset: property.offset)
            tracking.host?.refuseLink(refusal)
            return
        }
        notifyChange(of: index)
        tracking.withHost { host in
            if host.watchesSets { host.memberChanged(self) }
            guard host.recordsSets, !tracking.info.options[index].isLocal else { return }
            host.record(self, tracking: tracking, property: index, old: old)
        }
    }

    /// Value of a property by index, boxed (used by scopes to revert).
    func value(at index: Int) -> Any {
        let property = info.properties[index]
        return property.storage.value(in: self, offset: property.offset)
    }

    /// Sets a property by index from a boxed value of its exact type, notifying as a local set does.
    func setValue(_ value: Any, at index: Int) {
        let property = info.properties[index]
        property.storage.store(value, in: self, offset: property.offset, index: index)
    }

    // MARK: - Tree maintenance

    /// Updates parent links, notifies the children and their observers, and attaches new children
    /// to the scope; or, when the one-scope rule refuses the link (`refusalToLink`), changes
    /// nothing and returns why.
    private func relink(property: Int, from oldModels: [ModelObject], to newModels: [ModelObject], isCollection: Bool) -> ScopeMembershipError? {
        var removed: [(ModelObject, Int)] = []
        var inserted: [(ModelObject, Int)] = []
        if isCollection {
            (removed, inserted) = Self.collectionEdit(from: oldModels, to: newModels)
        } else {
            if let old = oldModels.first { removed.append((old, 0)) }
            if let new = newModels.first { inserted.append((new, 0)) }
        }
        if let scope = _tracking?.host, info.properties[property].isSynced,
           let refusal = Self.refusalToLink(inserted.lazy.map(\.0), into: scope) {
            return refusal
        }
        for (child, _) in removed {
            let links = child.tracking
            if let at = links.parents.firstIndex(where: { $0.parent === self && $0.property == property }) {
                links.parents.remove(at: at)
            }
        }
        for (child, _) in inserted {
            child.tracking.parents.append(ParentLink(parent: self, property: property))
        }
        let key = info.properties[property].name
        for (child, offset) in removed.reversed() {
            child.notifyParentChange(added: false, parent: self, key: key)
            if isCollection { notifyCollection(added: false, property: property, element: child, index: offset) }
        }
        for (child, offset) in inserted {
            child.notifyParentChange(added: true, parent: self, key: key)
            if isCollection { notifyCollection(added: true, property: property, element: child, index: offset) }
        }
        if let scope = _tracking?.host, info.properties[property].isSynced {
            for (child, _) in inserted where child.host !== scope { child.attach(to: scope) }
            let leaving = removed.map(\.0).filter { $0.host === scope }
            if !leaving.isEmpty { ModelObject.detachUnreachable(leaving, from: scope) }
        }
        return nil
    }

    /// The removals (with indices in the old contents) and insertions (with indices in the new
    /// contents) that turn `old` into `new`. The common prefix and suffix are skipped with one pass
    /// of pointer compares (no allocation), so an append, an insert, a removal or a replacement of
    /// one element costs O(n) compares plus O(edit); only what lies between them is diffed (Myers,
    /// O((m + d) × d) for m elements there and d changes). The result is a minimal edit, as a diff
    /// of the whole arrays gives.
    static func collectionEdit(from old: [ModelObject], to new: [ModelObject]) -> (removed: [(ModelObject, Int)], inserted: [(ModelObject, Int)]) {
        let (prefix, suffix) = commonEnds(old, new)
        let oldEnd = old.count - suffix
        let newEnd = new.count - suffix
        if prefix == oldEnd || prefix == newEnd {
            let removed = old[prefix..<oldEnd].enumerated().map { ($1, prefix + $0) }
            let inserted = new[prefix..<newEnd].enumerated().map { ($1, prefix + $0) }
            return (removed, inserted)
        }
        var removed: [(ModelObject, Int)] = []
        var inserted: [(ModelObject, Int)] = []
        for change in new[prefix..<newEnd].difference(from: old[prefix..<oldEnd], by: ===) {
            switch change {
            case .remove(let offset, let element, _): removed.append((element, prefix + offset))
            case .insert(let offset, let element, _): inserted.append((element, prefix + offset))
            }
        }
        return (removed, inserted)
    }

    /// The lengths of the common prefix and of the common suffix (not overlapping the prefix) of two
    /// arrays of models, by identity: one pass of pointer compares over their buffers. O(n).
    static func commonEnds(_ old: [ModelObject], _ new: [ModelObject]) -> (prefix: Int, suffix: Int) {
        old.commonEnds(with: new, by: ===)
    }

    /// Whether `a` is `b` itself: the same storage and count (arrays that share storage hold the same
    /// models, as storage shared is never written in place). O(1).
    static func isSameArray(_ a: [ModelObject], _ b: [ModelObject]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }

    /// Attaches this object and everything below it to `scope` (each object once, cycles included).
    /// An object can belong to one scope only: members of another scope met on the way move here,
    /// with everything below them (`leaveOtherScopes`: their old scope drops its references to
    /// them and they detach from it first). The caller has checked `refusalToLink`.
    func attach(to scope: ModelObjectHost) {
        var attached: [ModelObject] = []
        var movers: [ModelObject] = []
        var stack: [ModelObject] = [self]
        while let object = stack.popLast() {
            let tracking = object.tracking
            if let current = tracking.host {
                if current !== scope { movers.append(object) }
                continue
            }
            tracking.host = scope
            attached.append(object)
            scope.didAttach(object)
            stack.append(contentsOf: object.syncedChildObjects.reversed())
        }
        for object in attached { object.notifyHost(attached: true, host: scope) }
        guard !movers.isEmpty else { return }
        ModelObject.leaveOtherScopes(movers, for: scope)
        for mover in movers where mover.host == nil { mover.attach(to: scope) }
    }

    /// Detaches every object of the subtrees under `candidates` that can no longer be reached from
    /// the scope's root: an object stays when some parent outside those subtrees is still attached.
    static func detachUnreachable(_ candidates: [ModelObject], from scope: ModelObjectHost) {
        var subtree: [ModelObject] = []
        var inSubtree = Set<ObjectIdentifier>()
        var stack = candidates
        while let object = stack.popLast() {
            guard object.host === scope, inSubtree.insert(ObjectIdentifier(object)).inserted else { continue }
            subtree.append(object)
            stack.append(contentsOf: object.syncedChildObjects)
        }
        var kept = Set<ObjectIdentifier>()
        stack = subtree.filter { object in
            object === scope.hostRoot || scope.keepsAttached(object) || object.tracking.parents.contains { link in
                guard let parent = link.parent, parent.info.properties[link.property].isSynced else { return false }
                return parent.host === scope && !inSubtree.contains(ObjectIdentifier(parent))
            }
        }
        while let object = stack.popLast() {
            guard kept.insert(ObjectIdentifier(object)).inserted else { continue }
            stack.append(contentsOf: object.syncedChildObjects.filter { inSubtree.contains(ObjectIdentifier($0)) })
        }
        let leaving = subtree.filter { !kept.contains(ObjectIdentifier($0)) }
        for object in leaving {
            object.tracking.host = nil
            scope.didDetach(object)
        }
        for object in leaving { object.notifyHost(attached: false, host: scope) }
    }
}
