import Foundation

/// One measured figure: `value` and `baseline` are measured in the same run, `ratio = value / baseline`.
struct BenchFigure: Codable, Sendable {
    var name: String
    var value: Double
    var unit: String
    var baseline: Double
    var ratio: Double

    init(name: String, value: Double, unit: String, baseline: Double) {
        self.name = name
        self.value = value
        self.unit = unit
        self.baseline = baseline
        self.ratio = baseline == 0 ? 0 : value / baseline
    }

    /// One JSON object on one line: `{"name", "value", "unit", "baseline", "ratio"}`.
    var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
