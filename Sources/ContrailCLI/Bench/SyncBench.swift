/// Not built yet: reports no figures.
enum SyncBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] { [] }
}
