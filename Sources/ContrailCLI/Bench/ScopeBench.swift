/// Not built yet: reports no figures.
enum ScopeBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] { [] }
}
