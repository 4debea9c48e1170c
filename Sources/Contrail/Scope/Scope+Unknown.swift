import Foundation

/// Forward compatibility (Protocol §8.23): what the scope keeps that its app does not understand,
/// and how it writes it back. Every function here returns at once while the scope holds nothing
/// unknown.
extension Scope {
    /// Whether this replica makes objects of class `name`: a class is registered under it and the
    /// scope is not told to treat it as unknown (`unknownClassNames`).
    func knowsClass(_ name: String) -> Bool {
        ModelRegistry.isRegistered(name) && !unknownClassNames.contains(name)
    }

    /// The objects of classes this app does not know, as `add` fragments (UUID, class name and wire
    /// values as the scope keeps them). O(unknown objects).
    public var unknownObjects: [SyncFragment] {
        unknown.objects.map { SyncFragment(kind: .add, uuid: $0.key, className: $0.value.className, properties: $0.value.properties) }
    }

    /// The wire values `object` holds that its class does not declare (or cannot show: a reference
    /// or collection holding objects of unknown classes), by wire name. They go out unchanged in
    /// every `add` of the object.
    public func unknownValues(of object: ModelObject) -> [String: JSON] {
        unknown.extras.isEmpty ? [:] : unknown.extras[object.uuid] ?? [:]
    }

    /// An `add` of `object` with every synced value, and what it holds that its class does not
    /// declare: the scope's wire form of the whole object.
    func addFragment(of object: ModelObject) -> SyncFragment {
        var fragment = object.addFragment()
        if !unknown.extras.isEmpty, let extras = unknown.extras[object.uuid] {
            fragment.properties.merge(extras) { _, kept in kept }
        }
        return fragment
    }

    /// The part of remote wire value `wire` of property `index` (of `object`, known as `uuid` in the
    /// batch) that the app's property can hold: references to objects of unknown classes
    /// (`isUnknown`) left out. Returns it with the whole value to keep beside it (nil: nothing hidden).
    func visiblePart(_ wire: JSON, of info: ModelClassInfo, at index: Int, isUnknown: (UUID) -> Bool) -> (visible: JSON, whole: JSON?) {
        switch info.properties[index].valueKind {
        case .value:
            return (wire, nil)
        case .reference:
            guard let uuid = wire.stringValue.flatMap(UUID.init(wireString:)), isUnknown(uuid) else { return (wire, nil) }
            return (.null, wire)
        case .collection:
            guard case .array(let elements) = wire else { return (wire, nil) }
            let shown = elements.filter { element in
                !(element.stringValue.flatMap(UUID.init(wireString:)).map(isUnknown) ?? false)
            }
            // Spelled out: in a conditional expression `nil` would be read as `JSON.null`.
            if shown.count == elements.count { return (wire, Optional<JSON>.none) }
            return (.array(shown), wire)
        }
    }

    /// Keeps (or, for nil, forgets) wire value `value` of `name` beside known object `uuid`.
    func keepUnknown(_ name: String, _ value: JSON?, of uuid: UUID) {
        if let value {
            unknown.extras[uuid, default: [:]][name] = value
        } else if unknown.extras[uuid]?[name] != nil {
            // `removeValue`: a nil assigned to a `JSON` slot would be read as `JSON.null`.
            unknown.extras[uuid]?.removeValue(forKey: name)
            if unknown.extras[uuid]?.isEmpty == true { unknown.extras.removeValue(forKey: uuid) }
        }
    }

    /// After a revert gave collection property `index` of `object` back its value before: the whole
    /// value kept beside it (it holds objects of unknown classes) goes back too, as that value with
    /// the hidden elements the kept one held woven in where they were, so that what the reverted
    /// change set inserted is not left in it (nor attached through it). Where the server holds the
    /// hidden elements now, a fetch tells (the session asks for one, `keepsWholeValue`). O(n).
    func restoreKeptWhole(of object: ModelObject, at index: Int) {
        let property = object.info.properties[index]
        guard property.valueKind == .collection, let whole = unknown.extras[object.uuid]?[property.name] else { return }
        keepWoven(whole, into: property.storage.models(of: object.value(at: index)).map(\.uuid), as: property.name, of: object.uuid)
    }

    /// Keeps, as the whole value of property `name` of object `uuid`, `visible` with the hidden
    /// elements of `whole` (objects of unknown classes) woven in where they were; keeps nothing when
    /// no hidden element is left. O(n).
    func keepWoven(_ whole: JSON, into visible: [UUID], as name: String, of uuid: UUID) {
        let isHidden: (UUID) -> Bool = { [unknown] in unknown.objects[$0] != nil }
        let woven = UnknownState.weave(UnknownState.uuids(in: whole), into: visible, isHidden: isHidden)
        // `Optional`: a bare `nil` beside a `JSON` would be read as `JSON.null`.
        keepUnknown(name, woven.contains(where: isHidden) ? Optional(.array(woven.map { .string($0.wireString) })) : nil, of: uuid)
    }

    /// Whether the scope keeps a whole value beside collection or reference property `index` of
    /// `object` (it holds objects of unknown classes). O(1).
    func keepsWholeValue(of object: ModelObject, at index: Int) -> Bool {
        !unknown.extras.isEmpty && unknown.extras[object.uuid]?[object.info.properties[index].name] != nil
    }

    /// What a local edit of property `index` of `object` sends, from old wire value `oldWire` to
    /// `newWire`, when the scope keeps the property's whole value (it holds objects of unknown
    /// classes): a reference the app set goes out as set; a collection goes out with the unknown
    /// elements where they were, and its base is the whole value before the edit. Updates what is
    /// kept. Nil when nothing is kept for the property.
    func outgoingWhole(of object: ModelObject, at index: Int, oldWire: JSON, newWire: JSON) -> (value: JSON, base: [UUID]?)? {
        guard !unknown.extras.isEmpty else { return nil }
        let name = object.info.properties[index].name
        let uuid = object.uuid
        guard let whole = unknown.extras[uuid]?[name] else { return nil }
        guard object.info.properties[index].valueKind == .collection else {
            keepUnknown(name, nil, of: uuid)
            return nil
        }
        let isHidden: (UUID) -> Bool = { [unknown] in unknown.objects[$0] != nil }
        let oldVisible = UnknownState.uuids(in: oldWire)
        let fullOld = UnknownState.weave(UnknownState.uuids(in: whole), into: oldVisible, isHidden: isHidden)
        let fullNew = CollectionMerge.merge(base: oldVisible, new: UnknownState.uuids(in: newWire), current: fullOld)
        let value = JSON.array(fullNew.map { .string($0.wireString) })
        // `Optional`: a bare `nil` beside a `JSON` would be read as `JSON.null`.
        keepUnknown(name, fullNew.contains(where: isHidden) ? Optional(value) : nil, of: uuid)
        return (value, fullOld)
    }

    /// After a change: forgets the unknown objects nothing reaches any more (the server drops them
    /// too, Protocol §3.3), keeps attached the known objects only unknown ones (or kept values)
    /// reach, attaching those `created` in the batch being applied, and detaches the ones no longer
    /// reached. O(objects) while the scope holds anything unknown; O(1) otherwise.
    func reconcileUnknown(created: [UUID: ModelObject] = [:]) {
        guard !unknown.isEmpty else { return }
        guard let root else {
            unknown = UnknownState()
            return
        }
        var reached = Set<UUID>()
        var held = Set<UUID>()
        var seen = Set<ObjectIdentifier>()
        var stack: [ModelObject] = [root]
        var unknownStack: [UUID] = []
        func follow(_ value: JSON) {
            for uuid in UnknownState.uuids(in: value) {
                if unknown.objects[uuid] != nil {
                    if reached.insert(uuid).inserted { unknownStack.append(uuid) }
                } else if let object = objects[uuid] ?? created[uuid] ?? retired[uuid]?.object,
                          object.host == nil || object.host === self {
                    // A retired object: the batch took it out of the tree, but an unknown object holds it.
                    held.insert(uuid)
                    stack.append(object)
                }
            }
        }
        repeat {
            while let object = stack.popLast() {
                guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
                stack += object.syncedChildObjects
                if let extras = unknown.extras[object.uuid] { extras.values.forEach(follow) }
            }
            if let uuid = unknownStack.popLast(), let record = unknown.objects[uuid] {
                record.properties.values.forEach(follow)
            }
        } while !stack.isEmpty || !unknownStack.isEmpty
        let released = unknown.held.subtracting(held)
        unknown.held = held
        if reached.count != unknown.objects.count { unknown.objects = unknown.objects.filter { reached.contains($0.key) } }
        applyingRemote {
            for uuid in held {
                guard let object = objects[uuid] ?? created[uuid] ?? retired[uuid]?.object, object.host == nil else { continue }
                object.attach(to: self)
            }
            let leaving = released.compactMap { objects[$0] }
            if !leaving.isEmpty { ModelObject.detachUnreachable(leaving, from: self) }
        }
        unknown.extras = unknown.extras.filter { objects[$0.key] != nil || retired[$0.key]?.object != nil }
    }

    /// The whole tree as `add` fragments in pre-order from the root, each object once, with the
    /// objects of unknown classes where they are met and every object's unknown values.
    func snapshotWithUnknown(from root: ModelObject) -> [SyncFragment] {
        enum Node {
            case known(ModelObject)
            case unknown(UUID)
        }
        var fragments: [SyncFragment] = []
        var seen = Set<ObjectIdentifier>()
        var seenUnknown = Set<UUID>()
        var stack: [Node] = [.known(root)]
        func children(of value: JSON) -> [Node] {
            UnknownState.uuids(in: value).compactMap { uuid in
                if unknown.objects[uuid] != nil { return .unknown(uuid) }
                return objects[uuid].map { .known($0) }
            }
        }
        while let node = stack.popLast() {
            switch node {
            case .known(let object):
                guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
                fragments.append(addFragment(of: object))
                var next = object.syncedChildObjects.map { Node.known($0) }
                for value in (unknown.extras[object.uuid] ?? [:]).sorted(by: { $0.key < $1.key }).map(\.value) {
                    next += children(of: value)
                }
                stack.append(contentsOf: next.reversed())
            case .unknown(let uuid):
                guard seenUnknown.insert(uuid).inserted, let record = unknown.objects[uuid] else { continue }
                fragments.append(SyncFragment(kind: .add, uuid: uuid, className: record.className, properties: record.properties))
                let next = record.properties.sorted(by: { $0.key < $1.key }).flatMap { children(of: $0.value) }
                stack.append(contentsOf: next.reversed())
            }
        }
        return fragments
    }
}
