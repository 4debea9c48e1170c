/// Not built yet: reports no figures.
enum WebSocketBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] { [] }
}
