@_spi(Reflection) import Swift

/// True only while `ModelClassInfo` builds a class's probe instance: then every `@Property`
/// initialiser reports its options, which belong to the class, so instances do not store them.
///
/// Invariant (why `nonisolated(unsafe)`): written only on the main actor by `PropertyOptionsRecorder`,
/// read by `Property.init`, which runs inside `ModelObject` initialisers, also on the main actor.
@usableFromInline nonisolated(unsafe) var _isRecordingPropertyOptions = false

/// Collects the options of the `@Property` declarations of a class while its probe instance is
/// initialised. Stored-property initialisers run most derived class first, each class's in
/// declaration order; models created by property defaults report theirs in between, and are taken
/// out again when their own initialiser finishes.
@MainActor @usableFromInline
enum PropertyOptionsRecorder {
    /// Options and storage type, in the order the initialisers ran. Same invariant as
    /// `_isRecordingPropertyOptions`: touched only on the main actor.
    nonisolated(unsafe) private static var recorded: [(options: PropertyOptions, storage: ObjectIdentifier)] = []
    /// The entries of the object whose initialiser finished last.
    private static var finished: [(options: PropertyOptions, storage: ObjectIdentifier)] = []

    /// Called by every `@Property` initialiser while recording.
    @usableFromInline
    nonisolated static func record(_ options: PropertyOptions, storage: Any.Type) {
        recorded.append((options, ObjectIdentifier(storage)))
    }

    /// Called by `ModelObject.init(uuid:)` while recording: the last `count` entries are that object's.
    static func objectFinished(_ type: ModelObject.Type) {
        let count = min(propertyCount(type), recorded.count)
        finished = Array(recorded.suffix(count))
        recorded.removeLast(count)
    }

    /// Makes `make()` (a new instance of `type`) and returns it with the options of each of
    /// `fields` (superclass first, declaration order), or nil for all when the recorded
    /// declarations do not line up with the fields.
    static func options(of type: ModelObject.Type, fields: [any PropertyStorage.Type], _ make: () -> ModelObject) -> (ModelObject, [PropertyOptions]?) {
        recorded = []
        finished = []
        _isRecordingPropertyOptions = true
        let object = make()
        _isRecordingPropertyOptions = false
        // Most derived class first → superclass first.
        var levels: [ArraySlice<(options: PropertyOptions, storage: ObjectIdentifier)>] = []
        var remaining = finished[...]
        var level: AnyClass? = type
        while let current = level as? ModelObject.Type, current != ModelObject.self {
            let own = propertyCount(current) - ((_getSuperclass(current) as? ModelObject.Type).map(propertyCount) ?? 0)
            levels.append(remaining.prefix(own))
            remaining = remaining.dropFirst(own)
            level = _getSuperclass(current)
        }
        let ordered = levels.reversed().flatMap { $0 }
        recorded = []
        finished = []
        guard remaining.isEmpty, ordered.map(\.storage) == fields.map({ ObjectIdentifier($0) }) else { return (object, nil) }
        return (object, ordered.map(\.options))
    }

    /// The number of `@Property` fields of `type`, its superclasses' included.
    static func propertyCount(_ type: ModelObject.Type) -> Int {
        var count = 0
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1) /* classType */) { _, _, fieldType, _ in
            if fieldType is any PropertyStorage.Type { count += 1 }
            return true
        }
        return count
    }
}
