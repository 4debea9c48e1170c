/// Not built yet: reports no figures.
enum ModelBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] { [] }
}
