/// How a benchmark suite should run: `smoke` shrinks every loop so CI proves the code paths quickly.
struct BenchOptions: Sendable {
    var json = false
    var smoke = false

    /// `full` normally, `smoke` (at least 1) in a smoke run.
    func iterations(_ full: Int, smoke small: Int? = nil) -> Int {
        smoke ? max(1, small ?? full / 100) : full
    }
}
