import Contrail
import Foundation
import Observation

// The classes the model and scope benchmarks measure. They live in the benchmark's module, as an
// app's models live in the app, so the `@inlinable` property hot path is specialised here exactly
// as it would be in app code.

/// A model with four synced Doubles (the subject of `model.*` and `scope.*`).
final class BenchPoint: ModelObject {
    @Property var x: Double = 0
    @Property var y: Double = 0
    @Property var z: Double = 0
    @Property var w: Double = 0
}

/// The root of the benchmark trees: holds the points.
final class BenchCanvas: ModelObject {
    @Property var name = ""
    @Property var points: [BenchPoint] = []
}

/// The `@Observable` baseline: the same four Doubles, observed by the Observation module.
@Observable
final class ObservablePoint {
    var x: Double = 0
    var y: Double = 0
    var z: Double = 0
    var w: Double = 0
}

/// The memory baseline: a plain final class with four Doubles.
final class PlainPoint {
    var x: Double = 0
    var y: Double = 0
    var z: Double = 0
    var w: Double = 0
}

/// The object observers are registered for.
@MainActor
final class BenchObserver {
    var count = 0
}

/// Somewhere for benchmark results to go, so the optimizer cannot delete the loops that compute them.
enum BenchSink {
    nonisolated(unsafe) static var value: Double = 0
    nonisolated(unsafe) static var count: Int = 0

    /// Consumes a value through a call the optimizer cannot see into.
    @inline(never)
    static func consume(_ value: Double) {
        Self.value += value
    }

    /// Consumes an object, so its allocation cannot be elided.
    @inline(never)
    static func consume(_ object: AnyObject) {
        count &+= ObjectIdentifier(object).hashValue & 1
    }
}
