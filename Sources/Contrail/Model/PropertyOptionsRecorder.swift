@_spi(Reflection) import Swift

/// True only while `ModelClassInfo` builds a class's probe instance: then every `@Property`
/// initialiser reports its options, which belong to the class, so instances do not store them.
///
/// Invariant (why `nonisolated(unsafe)`): written only on the main actor by `PropertyOptionsRecorder`,
/// read by `Property.init`, which runs inside `ModelObject` initialisers, also on the main actor.
@usableFromInline nonisolated(unsafe) var _isRecordingPropertyOptions = false

/// Collects the options of the `@Property` declarations of a class while its probe instance is
/// initialised. Stored-property initialisers run most derived class first, each class's initial
/// values in declaration order and then the properties its initialiser's body assigns, in the
/// body's order; models created by property defaults report theirs in between, and are taken out
/// again when their own initialiser finishes. Each report carries where its `@Property` is
/// declared (the compiler passes it, also for a property the body assigns), so each class's
/// reports are put in declaration order by position before they are matched to its fields.
@MainActor @usableFromInline
enum PropertyOptionsRecorder {
    /// Options and storage type, in the order the initialisers ran. Same invariant as
    /// `_isRecordingPropertyOptions`: touched only on the main actor.
    nonisolated(unsafe) private static var recorded: [Entry] = []
    /// The entries of the object whose initialiser finished last.
    private static var finished: [Entry] = []

    /// One `@Property` initialiser's report: its options, its storage type, where it is declared.
    struct Entry {
        let options: PropertyOptions
        let storage: ObjectIdentifier
        let line: UInt
        let column: UInt
    }

    /// Called by every `@Property` initialiser while recording.
    @usableFromInline
    nonisolated static func record(_ options: PropertyOptions, storage: Any.Type, line: UInt, column: UInt) {
        recorded.append(Entry(options: options, storage: ObjectIdentifier(storage), line: line, column: column))
    }

    /// Called by `ModelObject.init(uuid:)` while recording: the last `count` entries are that object's.
    static func objectFinished(_ type: ModelObject.Type) {
        let count = min(propertyCount(type), recorded.count)
        finished = Array(recorded.suffix(count))
        recorded.removeLast(count)
    }

    /// Makes `make()` (a new instance of `type`) and returns it with the options of each of
    /// `fields` (superclass first, declaration order), or with why the recorded declarations do
    /// not line up with the fields (then no field's options are known).
    static func options(of type: ModelObject.Type, fields: [any PropertyStorage.Type], _ make: () -> ModelObject)
        -> (ModelObject, Result<[PropertyOptions], PropertyOptionsMismatch>) {
        recorded = []
        finished = []
        _isRecordingPropertyOptions = true
        let object = make()
        _isRecordingPropertyOptions = false
        // Most derived class first → superclass first.
        var levels: [[Entry]] = []
        var remaining = finished[...]
        var level: AnyClass? = type
        while let current = level as? ModelObject.Type, current != ModelObject.self {
            let own = propertyCount(current) - ((_getSuperclass(current) as? ModelObject.Type).map(propertyCount) ?? 0)
            // One class's declarations are in one file: their positions give declaration order.
            levels.append(remaining.prefix(own).sorted { ($0.line, $0.column) < ($1.line, $1.column) })
            remaining = remaining.dropFirst(own)
            level = _getSuperclass(current)
        }
        let ordered = levels.reversed().flatMap { $0 }
        let all = finished
        recorded = []
        finished = []
        if remaining.isEmpty, ordered.map(\.storage) == fields.map({ ObjectIdentifier($0) }) {
            return (object, .success(ordered.map(\.options)))
        }
        // Declarations that all carry the default options lose nothing when their order is off.
        if all.count == fields.count, all.allSatisfy({ $0.options == PropertyOptions() }) {
            return (object, .success(Array(repeating: PropertyOptions(), count: fields.count)))
        }
        return (object, .failure(PropertyOptionsMismatch(className: type.className, declarations: all.count, properties: fields.count)))
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
