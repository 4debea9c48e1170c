import Foundation

/// Writes the Prometheus text exposition format (version 0.0.4): for each metric family one
/// `# HELP` and one `# TYPE` line, then its samples, families never interleaved; label values and
/// help texts escaped as the format says. O(size of the text).
struct MetricsText {
    /// The `Content-Type` of the format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A family's type.
    enum Kind: String {
        case counter, gauge, histogram
    }

    /// The text so far.
    private(set) var text = ""

    /// Starts a family: its help and type lines.
    mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample line.
    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapedLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    /// A counter family with one sample (`name` ends in `_total`).
    mutating func counter(_ name: String, help: String, _ value: UInt64) {
        family(name, .counter, help: help)
        sample(name, [], Double(value))
    }

    /// A counter family with one sample per label value.
    mutating func counter(_ name: String, help: String, label: String, _ values: [(String, UInt64)]) {
        family(name, .counter, help: help)
        for (labelValue, value) in values { sample(name, [(label, labelValue)], Double(value)) }
    }

    /// A gauge family with one sample.
    mutating func gauge(_ name: String, help: String, _ value: Double) {
        family(name, .gauge, help: help)
        sample(name, [], value)
    }

    /// A histogram family: cumulative `_bucket` samples (`le` ascending, then `+Inf`), `_sum`, `_count`.
    mutating func histogram(_ name: String, help: String, _ snapshot: MetricsHistogram.Snapshot) {
        family(name, .histogram, help: help)
        for (bound, count) in snapshot.cumulative { sample(name + "_bucket", [("le", Self.format(bound))], Double(count)) }
        sample(name + "_bucket", [("le", "+Inf")], Double(snapshot.count))
        sample(name + "_sum", [], snapshot.sum)
        sample(name + "_count", [], Double(snapshot.count))
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN` as the format spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value with `\`, `"` and line feeds escaped.
    static func escapedLabel(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A help text with `\` and line feeds escaped.
    static func escapedHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
