/// Declares an observed, synced property of a `ModelObject` subclass.
///
/// ```swift
/// final class Shape: ModelObject {
///     @Property var x: Double = 0
///     @Property(local: true) var isSelected = false        // observable, never synced
///     @Property(minSyncInterval: 0.1) var dragOffset = 0.0  // recorded at most every 100 ms
/// }
/// ```
/// The wire name is the declared name (`x`). A set that leaves the value unchanged notifies nobody.
@propertyWrapper
public struct Property<Value: PropertyValue> {
    /// The value: the only stored field, so a `@Property` costs exactly its value's size. The
    /// options belong to the class and are collected once, when Contrail first looks at it.
    @usableFromInline var value: Value

    /// A property holding `wrappedValue`, never synced when `local`, recorded at most every
    /// `minSyncInterval` seconds. `line` and `column` are where the `@Property` is declared (leave
    /// them to the compiler): options are matched to the class's properties by them, whatever
    /// order an initialiser assigns the properties in.
    @inlinable
    public init(wrappedValue: Value, local: Bool = false, minSyncInterval: Double = 0, line: UInt = #line, column: UInt = #column) {
        value = wrappedValue
        if _isRecordingPropertyOptions {
            PropertyOptionsRecorder.record(PropertyOptions(local: local, minSyncInterval: minSyncInterval), storage: Self.self,
                                           line: line, column: column)
        }
    }

    /// The value; a set records a fragment in the object's scope and notifies observers.
    @available(*, unavailable, message: "@Property can only be used on ModelObject subclasses")
    public var wrappedValue: Value {
        get { fatalError("unreachable") }
        set { fatalError("unreachable") }
    }

    /// The hot path. Both accessors are forced inline so that, in the module that declares the
    /// model class, the key paths fold into direct stored-property accesses: no key-path object is
    /// made (`swift_getKeyPath`) and the generic key-path runtime is never entered, even when the
    /// set sits in an ordinary non-inlined method. An object with no observers, parents or scope
    /// just stores the value; anything else takes `_propertyDidSet` with the storage's offset.
    /// A get asks `ObservationProbe` whether it runs under observation tracking (what an
    /// `@Observable` getter pays) and only then registers the read with the object.
    @inlinable @MainActor
    public static subscript<Model: ModelObject>(
        _enclosingInstance object: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Property<Value>>
    ) -> Value {
        @inline(__always) get {
            if _isObservationTracking() {
                object._observationAccess(storageOffset: Self._offset(of: &object[keyPath: storageKeyPath], in: object))
            }
            return object[keyPath: storageKeyPath].value
        }
        @inline(__always) set {
            if Value.valueKind == .value, object._tracking == nil {
                object[keyPath: storageKeyPath].value = newValue
                return
            }
            let old = object[keyPath: storageKeyPath].value
            object[keyPath: storageKeyPath].value = newValue
            let offset = Self._offset(of: &object[keyPath: storageKeyPath], in: object)
            object._propertyDidSet(storageOffset: offset, old: old, new: newValue)
        }
    }

    /// The byte offset of a property's storage inside its object.
    @inlinable
    static func _offset(of storage: UnsafeMutablePointer<Property<Value>>, in object: AnyObject) -> Int {
        UnsafeMutableRawPointer(storage) - UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
    }
}
