import Observation

/// `Observable` support: reads under tracking register with a registrar made on first need, and
/// every change of a registered property (local, remote, undo, revert) is reported to it.
extension ModelObject {
    /// Registers a read of the property stored at `storageOffset` with the object's registrar,
    /// made here the first time. Called by a getter that runs under observation tracking.
    @usableFromInline
    final func _observationAccess(storageOffset: Int) {
        guard !ModelClassInfo.isBuildingProbe else { return }
        let tracking = self.tracking
        guard !tracking.isProbe, let index = tracking.info.index(forOffset: storageOffset) else { return }
        let box = tracking.observation ?? ObservationBox()
        tracking.observation = box
        box.registrar.access(self, keyPath: ModelObject.observationKeyPath(index))
    }

    /// Tells the registrar, if any, that property `index` changed (its new value is stored).
    func notifyObservation(of index: Int) {
        guard let registrar = _tracking?.observation?.registrar else { return }
        let keyPath = ModelObject.observationKeyPath(index)
        registrar.willSet(self, keyPath: keyPath)
        registrar.didSet(self, keyPath: keyPath)
    }

    /// The stand-in member the registrar tracks property `index` under.
    nonisolated subscript(_observedProperty index: Int) -> Int { index }

    /// The key path the registrar tracks property `index` under: one per index, shared by every
    /// class (a registrar belongs to one object). Amortised O(1).
    static func observationKeyPath(_ index: Int) -> KeyPath<ModelObject, Int> {
        while ObservationKeyPaths.all.count <= index {
            ObservationKeyPaths.all.append(\ModelObject.[_observedProperty: ObservationKeyPaths.all.count])
        }
        return ObservationKeyPaths.all[index]
    }
}

/// The cache of `ModelObject.observationKeyPath(_:)`.
@MainActor
enum ObservationKeyPaths {
    static var all: [KeyPath<ModelObject, Int>] = []
}
