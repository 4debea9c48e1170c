import Foundation

@_spi(Reflection) import Swift

/// What Contrail knows about one `ModelObject` subclass, derived once per class from its stored
/// fields: the `@Property` list with wire names and offsets, and a cache from key paths to properties.
@MainActor
final class ModelClassInfo {
    let type: ModelObject.Type
    let className: String
    let properties: [PropertyDescriptor]
    let indexByName: [String: Int]
    /// Each property's options, by index (read on every recorded set, without copying a descriptor).
    let options: [PropertyOptions]
    /// Property index + 1 by storage offset (0: no property there): one load per slow-path set.
    private let indexByOffset: [UInt16]
    /// A fresh instance: holds every property's default value, and answers key-path probes.
    let probe: ModelObject
    /// Set when the class's `@Property` options could not be matched to its properties: the class
    /// is refused (`ModelError.propertyOptionsMismatch`), and none of its properties syncs.
    let optionsMismatch: PropertyOptionsMismatch?
    private var indicesByKeyPath: [AnyKeyPath: [Int]] = [:]
    /// What a layer above derives from the class once and keeps here, so that finding it is a
    /// load (the value coding keeps its properties' coders). Main actor only, never held across
    /// a call that reaches it again: no dynamic exclusivity check.
    @exclusivity(unchecked) var derived: AnyObject?

    private static var infos: [ObjectIdentifier: ModelClassInfo] = [:]
    /// Set by a probe instance when a key-path probe reaches its setter.
    static var probedIndex: Int?
    /// True while a probe instance is being initialised: its sets are not tracked.
    static var isBuildingProbe = false

    static func of(_ type: ModelObject.Type) -> ModelClassInfo {
        if let info = infos[ObjectIdentifier(type)] { return info }
        let info = ModelClassInfo(type)
        infos[ObjectIdentifier(type)] = info
        ModelRegistry.registerReachable(from: info)
        return info
    }

    private init(_ type: ModelObject.Type) {
        self.type = type
        className = type.className
        var fields: [(name: String, offset: Int, storage: any PropertyStorage.Type)] = []
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1) /* classType */) { name, offset, fieldType, _ in
            if let storage = fieldType as? any PropertyStorage.Type {
                var label = String(cString: name)
                if label.hasPrefix("_") { label.removeFirst() }
                fields.append((label, offset, storage))
            }
            return true
        }
        ModelClassInfo.isBuildingProbe = true
        let (probe, recorded) = PropertyOptionsRecorder.options(of: type, fields: fields.map(\.storage)) {
            type.init(uuid: ModelObject.unassignedUUID)
        }
        ModelClassInfo.isBuildingProbe = false
        probe._tracking = ModelTracking(isProbe: true)
        self.probe = probe
        let options: [PropertyOptions]
        switch recorded {
        case .success(let matched):
            options = matched
            optionsMismatch = nil
        case .failure(let mismatch):
            // No property's options are known: none syncs, so a `local` one cannot leak.
            options = Array(repeating: PropertyOptions(local: true), count: fields.count)
            optionsMismatch = mismatch
            Self.report(mismatch)
        }
        properties = fields.enumerated().map { index, field in
            PropertyDescriptor(name: field.name, index: index, offset: field.offset, storage: field.storage, options: options[index])
        }
        var table = [UInt16](repeating: 0, count: (properties.map(\.offset).max() ?? -1) + 1)
        for property in properties { table[property.offset] = UInt16(property.index + 1) }
        indexByOffset = table
        self.options = properties.map(\.options)
        var byName = Dictionary(properties.map { ($0.name, $0.index) }, uniquingKeysWith: { first, _ in first })
        // Earlier wire names read into the property that has them now; a current name wins.
        for (current, previous) in type.previousPropertyWireNames {
            guard let index = byName[current] else { continue }
            for name in previous where byName[name] == nil { byName[name] = index }
        }
        indexByName = byName
        probe._tracking?.info = self
    }

    /// A class whose options cannot be matched is a programming error: debug builds trap with what
    /// to change; release builds say it on standard error (the class is refused either way).
    private static func report(_ mismatch: PropertyOptionsMismatch) {
        #if DEBUG
        if ModelRegistry.trapsOnOptionsMismatch { preconditionFailure("Contrail: \(mismatch.message)") }
        #endif
        FileHandle.standardError.write(Data("Contrail: \(mismatch.message); the class is refused and none of its properties syncs\n".utf8))
    }

    /// Throws `ModelError.propertyOptionsMismatch` when the class is refused.
    func checkOptions() throws(ModelError) {
        if let optionsMismatch {
            throw .propertyOptionsMismatch(className: className, declarations: optionsMismatch.declarations,
                                           properties: optionsMismatch.properties)
        }
    }

    /// The property stored at `offset` bytes into the object.
    func index(forOffset offset: Int) -> Int? {
        guard offset >= 0, offset < indexByOffset.count else { return nil }
        let entry = Int(indexByOffset[offset])
        return entry == 0 ? nil : entry - 1
    }

    /// The properties a key path names: one `@Property`, or a composite's dependencies.
    /// Any other key path is refused with `ObservationError.notAProperty`.
    func indices(for keyPath: AnyKeyPath) throws(ObservationError) -> [Int] {
        if let cached = indicesByKeyPath[keyPath] { return cached }
        var result: [Int] = []
        if let composite = type.compositeProperties.first(where: { $0.keyPath == keyPath }) {
            for dependency in composite.dependencies { result += try indices(for: dependency) }
        } else {
            ModelClassInfo.probedIndex = nil
            (keyPath as? any ProbeWritableKeyPath)?.probeWrite(on: probe)
            guard let index = ModelClassInfo.probedIndex else {
                throw .notAProperty(className: className, keyPath: "\(keyPath)")
            }
            result = [index]
        }
        indicesByKeyPath[keyPath] = result
        return result
    }
}

/// Writes a property's value back to itself, so a probe instance can learn which storage a
/// wrapped-property key path reaches.
@MainActor
protocol ProbeWritableKeyPath {
    func probeWrite(on object: AnyObject)
}

extension ReferenceWritableKeyPath: ProbeWritableKeyPath {
    func probeWrite(on object: AnyObject) {
        guard let root = object as? Root else { return }
        root[keyPath: self] = root[keyPath: self]
    }
}
