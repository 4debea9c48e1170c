import Foundation

/// A strict parser of the Prometheus text exposition format (version 0.0.4), for checking what
/// `/metrics` serves: every rule of the format that a scraper relies on is an error here.
///
/// - Lines end with `\n`, the text too; `# HELP` and `# TYPE` at most once per family, before its
///   samples; a family's lines are contiguous (never interleaved with another's).
/// - Metric names match `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*` (not
///   `__`-prefixed, no duplicates), label values are quoted with only `\\`, `\"` and `\n` escapes.
/// - Values parse as floats (`+Inf`, `-Inf`, `NaN` included); counters are not negative; no series
///   (name and labels) appears twice.
/// - A histogram `X` has only `X_bucket` (with `le`), `X_sum` and `X_count` samples; per label set
///   its buckets ascend in `le`, their counts never fall, the last is `le="+Inf"` and equals `X_count`.
public struct PrometheusText {
    /// One metric family: its name, type, help and samples.
    public struct Family {
        /// The family's name.
        public var name: String
        /// `counter`, `gauge`, `histogram`, `summary` or `untyped`.
        public var type: String
        /// The help text, escapes kept.
        public var help: String?
        /// The family's samples, in order.
        public var samples: [Sample] = []
    }

    /// One sample line.
    public struct Sample {
        /// The sample's name (a histogram's carry `_bucket`, `_sum` or `_count`).
        public var name: String
        /// Its labels, unescaped.
        public var labels: [String: String]
        /// Its value.
        public var value: Double
    }

    /// The families, in the order they appeared.
    public private(set) var families: [Family] = []

    /// Parses `text`; throws ``TestFailure`` naming the line at the first breach of the format.
    public init(parsing text: String) throws {
        guard text.hasSuffix("\n") else { throw TestFailure("the text does not end with a line feed") }
        var declared: [String: (type: String?, help: String?, sampled: Bool)] = [:]
        var current: String?
        var closed: Set<String> = []
        var seen: Set<String> = []
        var types: [String: String] = [:]
        var samples: [Sample] = []
        var order: [String] = []

        func enter(_ family: String, line: Int) throws {
            if current == family { return }
            if let current { closed.insert(current) }
            guard !closed.contains(family) else { throw TestFailure("line \(line): family \(family) appears again after another family") }
            current = family
            order.append(family)
        }

        for (offset, raw) in text.dropLast().split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let text = String(raw)
            if text.isEmpty { throw TestFailure("line \(line): empty line") }
            if text.hasPrefix("#") {
                let parts = text.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else {
                    continue   // a plain comment
                }
                let name = parts[2]
                guard Self.isMetricName(name) else { throw TestFailure("line \(line): bad metric name '\(name)'") }
                try enter(name, line: line)
                var entry = declared[name] ?? (nil, nil, false)
                guard !entry.sampled else { throw TestFailure("line \(line): \(parts[1]) of \(name) after its samples") }
                if parts[1] == "HELP" {
                    guard entry.help == nil else { throw TestFailure("line \(line): second HELP for \(name)") }
                    let help = parts.count > 3 ? parts[3] : ""
                    try Self.checkEscapes(help, allowQuote: true, line: line)
                    entry.help = help
                } else {
                    guard entry.type == nil else { throw TestFailure("line \(line): second TYPE for \(name)") }
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                        throw TestFailure("line \(line): bad TYPE line '\(text)'")
                    }
                    entry.type = parts[3]
                    types[name] = parts[3]
                }
                declared[name] = entry
                continue
            }
            let sample = try Self.parseSample(text, line: line)
            let family = Self.family(of: sample.name, types: types)
            try enter(family, line: line)
            declared[family, default: (nil, nil, false)].sampled = true
            let type = types[family] ?? "untyped"
            if type == "histogram" {
                let suffix = sample.name.dropFirst(family.count)
                guard ["_bucket", "_sum", "_count"].contains(suffix) else {
                    throw TestFailure("line \(line): \(sample.name) is not a sample of histogram \(family)")
                }
                if suffix == "_bucket", sample.labels["le"] == nil { throw TestFailure("line \(line): a bucket without le") }
            } else if sample.name != family {
                throw TestFailure("line \(line): \(sample.name) in family \(family)")
            }
            if type == "counter", !(sample.value >= 0) { throw TestFailure("line \(line): negative counter \(sample.name)") }
            let key = sample.name + "{" + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
            guard seen.insert(key).inserted else { throw TestFailure("line \(line): series \(key) appears twice") }
            samples.append(sample)
        }
        for name in order {
            let family = Family(name: name, type: types[name] ?? "untyped", help: declared[name]?.help,
                                samples: samples.filter { Self.family(of: $0.name, types: types) == name })
            if family.type == "histogram" { try Self.checkHistogram(family) }
            families.append(family)
        }
    }

    /// The family named `name`.
    public func family(_ name: String) -> Family? {
        families.first { $0.name == name }
    }

    /// The value of the sample `name` with exactly `labels`.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        families.lazy.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
    }

    private static func family(of sampleName: String, types: [String: String]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where sampleName.hasSuffix(suffix) {
            let base = String(sampleName.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return sampleName
    }

    private static func checkHistogram(_ family: Family) throws {
        var byLabels: [[String: String]: [(le: Double, count: Double)]] = [:]
        var counts: [[String: String]: Double] = [:]
        var sums: Set<[String: String]> = []
        for sample in family.samples {
            var labels = sample.labels
            if sample.name.hasSuffix("_bucket") {
                let le = labels.removeValue(forKey: "le") ?? ""
                guard let bound = le == "+Inf" ? Double.infinity : Double(le) else { throw TestFailure("\(family.name): bad le '\(le)'") }
                byLabels[labels, default: []].append((bound, sample.value))
            } else if sample.name.hasSuffix("_count") {
                counts[labels] = sample.value
            } else {
                sums.insert(labels)
            }
        }
        for (labels, buckets) in byLabels {
            for (earlier, later) in zip(buckets, buckets.dropFirst()) {
                guard earlier.le < later.le else { throw TestFailure("\(family.name): le not ascending") }
                guard earlier.count <= later.count else { throw TestFailure("\(family.name): bucket counts fall") }
            }
            guard buckets.last?.le == .infinity else { throw TestFailure("\(family.name): no le=\"+Inf\" bucket") }
            guard counts[labels] == buckets.last?.count else { throw TestFailure("\(family.name): +Inf bucket differs from _count") }
            guard sums.contains(labels) else { throw TestFailure("\(family.name): no _sum") }
        }
        guard !byLabels.isEmpty else { throw TestFailure("\(family.name): a histogram without buckets") }
    }

    private static func parseSample(_ text: String, line: Int) throws -> Sample {
        let characters = Array(text)
        var index = 0
        while index < characters.count, characters[index] != "{", characters[index] != " " { index += 1 }
        let name = String(characters[..<index])
        guard isMetricName(name) else { throw TestFailure("line \(line): bad metric name '\(name)'") }
        var labels: [String: String] = [:]
        if index < characters.count, characters[index] == "{" {
            index += 1
            while index < characters.count, characters[index] != "}" {
                let start = index
                while index < characters.count, characters[index] != "=" { index += 1 }
                let label = String(characters[start..<index])
                guard isLabelName(label), !label.hasPrefix("__") else { throw TestFailure("line \(line): bad label name '\(label)'") }
                guard index + 1 < characters.count, characters[index + 1] == "\"" else { throw TestFailure("line \(line): unquoted label value") }
                index += 2
                var value = ""
                while true {
                    guard index < characters.count else { throw TestFailure("line \(line): unterminated label value") }
                    let character = characters[index]
                    if character == "\"" { break }
                    if character == "\\" {
                        guard index + 1 < characters.count else { throw TestFailure("line \(line): dangling escape") }
                        switch characters[index + 1] {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw TestFailure("line \(line): bad escape in a label value")
                        }
                        index += 2
                        continue
                    }
                    value.append(character)
                    index += 1
                }
                index += 1
                guard labels.updateValue(value, forKey: label) == nil else { throw TestFailure("line \(line): label \(label) twice") }
                if index < characters.count, characters[index] == "," { index += 1 }
            }
            guard index < characters.count else { throw TestFailure("line \(line): unterminated label set") }
            index += 1
        }
        guard index < characters.count, characters[index] == " " else { throw TestFailure("line \(line): no space before the value") }
        let rest = String(characters[(index + 1)...]).split(separator: " ", omittingEmptySubsequences: false)
        guard rest.count == 1 || rest.count == 2, let value = parseValue(String(rest[0])) else {
            throw TestFailure("line \(line): bad value in '\(text)'")
        }
        if rest.count == 2, Int64(rest[1]) == nil { throw TestFailure("line \(line): bad timestamp") }
        return Sample(name: name, labels: labels, value: value)
    }

    private static func parseValue(_ text: String) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: text.allSatisfy({ "0123456789.eE+-".contains($0) }) ? Double(text) : nil
        }
    }

    private static func checkEscapes(_ text: String, allowQuote: Bool, line: Int) throws {
        var characters = text.makeIterator()
        while let character = characters.next() {
            guard character == "\\" else { continue }
            guard let next = characters.next(), next == "\\" || next == "n" else { throw TestFailure("line \(line): bad escape in HELP") }
        }
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic || first == "_" || first == ":" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == ":") }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
    }
}
