import Foundation
import Testing
@testable import Contrail
@testable import ContrailWire

@Suite struct SyncFragmentTests {
    static let shapeUUID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

    @Test func parsesTheSpecExample() throws {
        let json = try JSON(parsing: #"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"Shape","properties":{"x":10,"y":20,"color":500346879}}"#)
        let fragment = try SyncFragment(json: json)
        #expect(fragment.kind == .add)
        #expect(fragment.uuid == UUID(uuidString: Self.shapeUUID))
        #expect(fragment.className == "Shape")
        #expect(fragment.properties == ["x": 10, "y": 20, "color": 500_346_879])
        #expect(fragment.bases == nil)
        #expect(fragment.json == json)
        #expect(try SyncFragment(json: JSON(parsing: fragment.json.serialized())) == fragment)
    }

    @Test func streamedWritingMatchesTheJSONValue() throws {
        let fragments = [
            SyncFragment(kind: .add, uuid: UUID(), className: "Shape",
                         properties: ["x": 1.5, "name": "quote \" and \\ slash", "tags": ["a", "b"], "none": .null]),
            SyncFragment(kind: .change, uuid: UUID(), className: "Canvas",
                         properties: ["shapes": .array([.string(UUID().wireString)])], bases: ["shapes": [UUID(), UUID()]]),
        ]
        for fragment in fragments {
            var writer = JSONWriter(sortedKeys: false)
            fragment.write(into: &writer)
            #expect(try JSON(parsing: writer.bytes) == fragment.json)
        }
        #expect(try JSON(parsing: SyncFragment.serialized(fragments)) == .array(fragments.map(\.json)))
        #expect(try JSON(parsing: SyncFragment.serialized([])) == .array([]))
    }

    @Test func theWriterWritesDoublesAndUUIDsAsTheirDescriptions() throws {
        // Whole numbers take a fast path below 10^15: it must write exactly what `description` does,
        // on both sides of the bound (control: values that still go through `description`).
        var values: [Double] = [0, -0.0, 1, -1, 65536, 123_456_789, 1e15 - 1, -(1e15 - 1), 1e15, 1e16, 0.1, -2.5, .leastNonzeroMagnitude, 1e300]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { values.append(Double(Int64.random(in: -999_999_999_999_999...999_999_999_999_999, using: &generator))) }
        for value in values {
            var writer = JSONWriter(sortedKeys: false)
            writer.write(.double(value))
            #expect(String(decoding: writer.bytes, as: UTF8.self) == value.description)
        }
        for _ in 0..<100 {
            let uuid = UUID()
            var writer = JSONWriter(sortedKeys: false)
            writer.writeUUID(uuid)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == "\"\(uuid.uuidString.lowercased())\"")
        }
    }

    @Test func uuidsGoOutLowercase() throws {
        let json: JSON = ["type": "change", "uuid": .string(Self.shapeUUID.uppercased()), "clsName": "Shape", "properties": [:]]
        let fragment = try SyncFragment(json: json)
        #expect(fragment.json["uuid"] == .string(Self.shapeUUID))
    }

    @Test func missingOrNullPropertiesBecomeEmptyAndAreAlwaysSent() throws {
        for json: JSON in [
            ["type": "change", "uuid": .string(Self.shapeUUID), "clsName": "Shape"],
            ["type": "change", "uuid": .string(Self.shapeUUID), "clsName": "Shape", "properties": nil],
        ] {
            let fragment = try SyncFragment(json: json)
            #expect(fragment.properties.isEmpty)
            #expect(fragment.json["properties"] == .object([:]))
        }
    }

    @Test func acceptsEveryWireValueKind() throws {
        let properties: JSON = [
            "s": "text", "i": -1, "u": .uint(.max), "d": 1420070400.123, "b": false, "n": nil,
            "refs": ["a1", "b2"], "nums": [1, 2.5, .uint(.max)], "nulls": [nil, nil], "empty": [], "flags": [true, false],
        ]
        let json: JSON = ["type": "add", "uuid": .string(Self.shapeUUID), "clsName": "Shape", "properties": properties]
        #expect(try SyncFragment(json: json).properties == properties.objectValue)
    }

    @Test(arguments: [
        (#"[]"#, "Fragment is not an object"),
        (#"{"uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S"}"#, "Invalid type"),
        (#"{"type":"delete","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S"}"#, "Invalid type"),
        (#"{"type":"ADD","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S"}"#, "Invalid type"),
        (#"{"type":"add","clsName":"S"}"#, "Invalid uuid"),
        (#"{"type":"add","uuid":"not-a-uuid","clsName":"S"}"#, "Invalid uuid"),
        (#"{"type":"add","uuid":42,"clsName":"S"}"#, "Invalid uuid"),
        (#"{"type":"add","uuid":"3f2504e04f8911d39a0c0305e82c3301","clsName":"S"}"#, "Invalid uuid"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301"}"#, "Invalid clsName"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":7}"#, "Invalid clsName"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":[]}"#, "Invalid properties"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"o":{"a":1}}}"#,
         "Property 'o': not a string, number, boolean, array, date, null"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"a":[[1]]}}"#,
         "Property 'a': cannot have arrays in an array"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"a":[{}]}}"#,
         "Property 'a': not a string, number, boolean, array, date, null"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"a":[1,"1"]}}"#,
         "Property 'a': not all array value types match"),
        (#"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"a":[null,1,"1"]}}"#,
         "Property 'a': not all array value types match"),
        (#"{"type":"change","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","bases":[]}"#, "Invalid bases"),
        (#"{"type":"change","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","bases":{"k":["x"]}}"#,
         "Base 'k' is not an array of UUIDs"),
        (#"{"type":"change","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","bases":{"k":"x"}}"#,
         "Base 'k' is not an array of UUIDs"),
    ] as [(String, String)])
    func rejectsInvalidFragments(text: String, reason: String) throws {
        let json = try JSON(parsing: text)
        #expect(throws: WireError.invalidFragment(index: nil, reason: reason)) { try SyncFragment(json: json) }
    }

    /// A null element is a hole (NaN, or nil in an optional element) among elements of one kind
    /// (Protocol §3); the negative cases are in `rejectsInvalidFragments`.
    @Test(arguments: [#"["x",null]"#, #"[1.5,null]"#, #"[null,true,null]"#, #"[null]"#, #"[1,2]"#])
    func acceptsNullHolesInArraysOfOneKind(array: String) throws {
        let json = try JSON(parsing: #"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","properties":{"a":"# + array + "}}")
        #expect(try SyncFragment(json: json).properties["a"] == (try JSON(parsing: array)))
    }

    @Test func ignoresUnknownFields() throws {
        let json = try JSON(parsing: #"{"type":"add","uuid":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","clsName":"S","extra":{"deep":[[1]]}}"#)
        #expect(try SyncFragment(json: json).className == "S")
    }

    @Test func basesRoundTrip() throws {
        let a = UUID(), b = UUID()
        let fragment = SyncFragment(kind: .change, uuid: UUID(), className: "Canvas",
                                    properties: ["shapes": [.string(b.wireString), .string(a.wireString)]],
                                    bases: ["shapes": [a, b]])
        let json = fragment.json
        #expect(json["bases"] == ["shapes": [.string(a.wireString), .string(b.wireString)]])
        #expect(try SyncFragment(json: JSON(parsing: json.serialized())) == fragment)
        let withoutBases = SyncFragment(kind: .change, uuid: UUID(), className: "Canvas")
        #expect(withoutBases.json["bases"] == nil)
    }

    @Test func codableUsesTheWireShape() throws {
        let fragment = SyncFragment(kind: .add, uuid: UUID(), className: "Shape", properties: ["x": 1.5, "name": "a"])
        let data = try JSONEncoder().encode(fragment)
        #expect(try JSON(parsing: data) == fragment.json)
        #expect(try JSONDecoder().decode(SyncFragment.self, from: data) == fragment)
        let bad = Data(#"{"type":"remove","uuid":"x","clsName":"S"}"#.utf8)
        #expect(throws: WireError.invalidFragment(index: nil, reason: "Invalid type")) {
            try JSONDecoder().decode(SyncFragment.self, from: bad)
        }
    }

    // MARK: UUID wire form

    @Test func uuidWireForm() throws {
        let uuid = try #require(UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301"))
        #expect(uuid.wireString == Self.shapeUUID)
        #expect(UUID(wireString: Self.shapeUUID) == uuid)
        #expect(UUID(wireString: Self.shapeUUID.uppercased()) == uuid)
        #expect(UUID(wireString: "09afAF09-0000-0000-0000-000000000000")?.wireString == "09afaf09-0000-0000-0000-000000000000")
        for _ in 0..<100 {
            let random = UUID()
            #expect(random.wireString == random.uuidString.lowercased())
            #expect(UUID(wireString: random.wireString) == random)
        }
        let malformed = ["", "3f2504e0-4f89-11d3-9a0c-0305e82c330", "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
                         "3f2504e0_4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c330g",
                         " 3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c33011",
                         "3f2504e04-f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c33é"]
            + ["/", ":", "@", "G", "`", "g", "\u{7F}"].map { "3f2504e0-4f89-11d3-9a0c-0305e82c33\($0)1" }
        for bad in malformed {
            #expect(UUID(wireString: bad) == nil, "\(bad)")
        }
    }
}
