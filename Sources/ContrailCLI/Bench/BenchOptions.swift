/// How a benchmark suite should run: `smoke` shrinks every loop so CI proves the code paths quickly.
struct BenchOptions: Sendable {
    var json = false
    var smoke = false
    /// `sync` runs its server with a session hook granting each session a JWT-sized identity
    /// (a dozen grants, the bench scope matched by a `*` pattern), to show what grant checks cost.
    var grants = false
    /// `--only PART`: run only that part of a suite (`scope`: `log_modify`), for repeated runs of one figure.
    var only: String?
    /// `--offline-edits N,...`: `collections`' offline sizes instead of 1,000 and 5,000.
    var offlineEdits: [Int]?

    /// `full` normally, `smoke` (at least 1) in a smoke run.
    func iterations(_ full: Int, smoke small: Int? = nil) -> Int {
        smoke ? max(1, small ?? full / 100) : full
    }
}
