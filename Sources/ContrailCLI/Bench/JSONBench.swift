import Contrail
import Foundation

/// `contrail bench json`: our `JSON` parser and serializer against Foundation's `JSONSerialization`
/// on about 1 MB of sync fragments (a large `ScopeState`). Values and baselines are milliseconds
/// per pass, so a ratio below 1 means Contrail is faster.
enum JSONBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        let document = makeDocument(targetBytes: options.smoke ? 10_000 : 1_000_000)
        let data = Data(document)
        let rounds = options.smoke ? 1 : 10

        var sink = 0
        let ours = try Stopwatch.best(rounds: rounds) {
            let value = try JSON(parsing: document)
            sink &+= value.arrayValue?.count ?? 0
        }
        let foundation = try Stopwatch.best(rounds: rounds) {
            let value = try JSONSerialization.jsonObject(with: data)
            sink &+= (value as? [Any])?.count ?? 0
        }
        let oursFragments = try Stopwatch.best(rounds: rounds) {
            let value = try JSON(parsing: document)
            for element in value.arrayValue ?? [] {
                let fragment = try SyncFragment(json: element)
                sink &+= fragment.properties.count
            }
        }

        let parsed = try JSON(parsing: document)
        let foundationObject = try JSONSerialization.jsonObject(with: data)
        let oursWrite = Stopwatch.best(rounds: rounds) {
            sink &+= parsed.serialized().count
        }
        let foundationWrite = try Stopwatch.best(rounds: rounds) {
            sink &+= try JSONSerialization.data(withJSONObject: foundationObject).count
        }
        if sink == 42 { print("") } // keeps the work observable

        return [
            BenchFigure(name: "json.parse", value: ours * 1000, unit: "ms", baseline: foundation * 1000),
            BenchFigure(name: "json.parse_fragments", value: oursFragments * 1000, unit: "ms", baseline: foundation * 1000),
            BenchFigure(name: "json.serialize", value: oursWrite * 1000, unit: "ms", baseline: foundationWrite * 1000),
        ]
    }

    /// A JSON array of `add` fragments with typical property values, about `targetBytes` long.
    static func makeDocument(targetBytes: Int) -> [UInt8] {
        var fragments: [JSON] = []
        var size = 2
        var counter: UInt64 = 0x1234_5678
        func next() -> UInt64 {
            counter = counter &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return counter >> 11
        }
        var children: [JSON] = []
        while size < targetBytes {
            let uuid = UUID()
            let properties: [String: JSON] = [
                "x": .double(Double(next() % 100_000) / 100),
                "y": .double(Double(next() % 100_000) / 100),
                "width": .int(Int64(next() % 1000)),
                "height": .int(Int64(next() % 1000)),
                "color": .int(Int64(next() % 0xFFFF_FFFF)),
                "name": .string("Shape \(next() % 10_000) — “quoted” \\ é"),
                "postedAt": .double(1_420_070_400.123 + Double(next() % 1000)),
                "visible": .bool(next() % 2 == 0),
                "parent": next() % 4 == 0 ? .null : .string(UUID().wireString),
                "children": .array(children),
            ]
            children = next() % 3 == 0 ? [.string(uuid.wireString), .string(UUID().wireString)] : []
            let fragment = SyncFragment(kind: .add, uuid: uuid, className: "Shape", properties: properties).json
            size += fragment.serialized().count + 1
            fragments.append(fragment)
        }
        return JSON.array(fragments).serialized()
    }
}
