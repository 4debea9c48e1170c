import Contrail
import Observation

// Models declared in a library of their own, as an app that keeps its models in a framework
// would: `contrail bench model` sets them from the benchmark's module (`model.set.cross_module`).

/// A model with four synced Doubles, declared outside the module that sets it.
public final class LibraryPoint: ModelObject {
    /// The first coordinate.
    @Property public var x: Double = 0
    /// The second coordinate.
    @Property public var y: Double = 0
    /// The third coordinate.
    @Property public var z: Double = 0
    /// The fourth coordinate.
    @Property public var w: Double = 0
}

/// The `@Observable` baseline of `LibraryPoint`, declared in the same library.
@Observable
public final class LibraryObservablePoint {
    /// The first coordinate.
    public var x: Double = 0
    /// The second coordinate.
    public var y: Double = 0
    /// The third coordinate.
    public var z: Double = 0
    /// The fourth coordinate.
    public var w: Double = 0

    /// A point at the origin.
    public init() {}
}
