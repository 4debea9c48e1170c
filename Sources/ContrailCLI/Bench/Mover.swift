import Contrail
import ContrailBenchModels

/// App-style call sites for `contrail bench model`: each `move` is an ordinary method the optimizer
/// may not inline into the benchmark loop, so the set inside it is compiled as in an event handler,
/// once, for any value and any object of its class.
@MainActor
enum Mover {
    @inline(never) static func move(_ point: BenchPoint, to value: Double) { point.x = value }
    @inline(never) static func move(_ point: ObservablePoint, to value: Double) { point.x = value }
    @inline(never) static func move(_ point: LibraryPoint, to value: Double) { point.x = value }
    @inline(never) static func move(_ point: LibraryObservablePoint, to value: Double) { point.x = value }
    @inline(never) static func read(_ point: BenchPoint) -> Double { point.x }
    @inline(never) static func read(_ point: ObservablePoint) -> Double { point.x }

    /// Calls `body` `count` times with the values `start`, `start + 1`, ….
    static func run(_ count: Int, from start: Double = 0, _ body: (Double) -> Void) {
        var value = start
        for _ in 0..<count {
            body(value)
            value += 1
        }
    }
}
