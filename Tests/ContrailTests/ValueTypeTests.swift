import Contrail
import Foundation
import Testing

enum ValueMood: String, PropertyValue, Sendable { case calm, happy = "😀 smile", angry }
enum ValuePriority: Int, PropertyValue, Sendable { case low = -1, normal = 0, high = 7 }

/// A child for the reference and collection properties of `ValueHolder`.
final class ValueChild: ModelObject {
    @Property var name = ""
}

/// Every value type a property can hold, each once.
final class ValueHolder: ModelObject {
    @Property var string = ""
    @Property var bool = false
    @Property var int = 0
    @Property var int8: Int8 = 0
    @Property var int16: Int16 = 0
    @Property var int32: Int32 = 0
    @Property var int64: Int64 = 0
    @Property var uint: UInt = 0
    @Property var uint8: UInt8 = 0
    @Property var uint16: UInt16 = 0
    @Property var uint32: UInt32 = 0
    @Property var uint64: UInt64 = 0
    @Property var float: Float = 0
    @Property var double: Double = 0
    @Property var date = Date(timeIntervalSince1970: 0)
    @Property var data = Data()
    @Property var url = URL(string: "https://example.com")!
    @Property var uuidValue = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Property var color = ModelColor.black
    @Property var mood = ValueMood.calm
    @Property var priority = ValuePriority.normal
    @Property var optionalString: String?
    @Property var optionalInt: Int?
    @Property var optionalDate: Date?
    @Property var optionalMood: ValueMood?
    @Property var numbers: [Double] = []
    @Property var child: ValueChild?
    @Property var children: [ValueChild] = []
}

@MainActor
@Suite struct ValueTypeTests {
    /// A scope rooted at a `ValueHolder` and a replica scope whose root has the same UUID.
    func makePair() -> (Scope, ValueHolder, Scope, ValueHolder) {
        let scope = Scope(name: "values")
        let holder = ValueHolder()
        scope.root = holder
        let replica = Scope(name: "values")
        let replicaHolder = ValueHolder(uuid: holder.uuid)
        replica.root = replicaHolder
        return (scope, holder, replica, replicaHolder)
    }

    /// Flushes `scope`, sends the change set through JSON text, applies it to `replica`, and
    /// checks both states are equal.
    @discardableResult
    func sync(_ scope: Scope, to replica: Scope, sourceLocation: SourceLocation = #_sourceLocation) throws -> ChangeSet {
        let changeSet = try #require(scope.flush(), sourceLocation: sourceLocation)
        let text = JSON.array(changeSet.fragments.map(\.json)).jsonString
        let parsed = try JSON(parsing: text)
        let elements = try #require(parsed.arrayValue, sourceLocation: sourceLocation)
        let fragments = try elements.map { try SyncFragment(json: $0) }
        #expect(fragments == changeSet.fragments, sourceLocation: sourceLocation)
        let report = try replica.apply(fragments)
        #expect(report.unknownProperties.isEmpty && report.unknownObjects.isEmpty, sourceLocation: sourceLocation)
        #expect(replica.stateJSON() == scope.stateJSON(), sourceLocation: sourceLocation)
        #expect(replica.flush() == nil, sourceLocation: sourceLocation)
        return changeSet
    }

    @Test func everyValueTypeAtItsMaximumRoundTrips() throws {
        let (scope, holder, replica, copy) = makePair()
        holder.string = "héllo wörld 🌍 \"quoted\" back\\slash\nnew line\ttab \u{1} e\u{301} 中文"
        holder.bool = true
        holder.int = .max
        holder.int8 = .max
        holder.int16 = .max
        holder.int32 = .max
        holder.int64 = .max
        holder.uint = .max
        holder.uint8 = .max
        holder.uint16 = .max
        holder.uint32 = .max
        holder.uint64 = .max
        holder.float = .greatestFiniteMagnitude
        holder.double = 1.7976931348623157e308
        holder.date = Date(timeIntervalSince1970: 1_700_000_000.25)
        holder.data = Data((0...255).map { UInt8($0) })
        holder.url = URL(string: "https://example.com/a%20path/?q=1&r=%C3%A9#frag")!
        holder.uuidValue = UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!
        holder.color = ModelColor(red: 0x1D, green: 0xD2, blue: 0xAF)
        holder.mood = .happy
        holder.priority = .high
        holder.optionalString = "present"
        holder.optionalInt = -42
        holder.optionalDate = Date(timeIntervalSince1970: -86_400.5)
        holder.optionalMood = .angry
        holder.numbers = [1.5, -2, 0, 1e-300, .pi]
        holder.child = ValueChild()
        holder.child?.name = "only child"
        holder.children = [ValueChild(), ValueChild()]
        holder.children[1].name = "second"
        let changeSet = try sync(scope, to: replica)
        #expect(changeSet.fragments.count == 4)   // the root's change and three adds

        #expect(copy.string == holder.string)
        #expect(copy.bool)
        #expect(copy.int == .max && copy.int8 == .max && copy.int16 == .max && copy.int32 == .max && copy.int64 == .max)
        #expect(copy.uint == .max && copy.uint8 == .max && copy.uint16 == .max && copy.uint32 == .max && copy.uint64 == .max)
        #expect(copy.float == .greatestFiniteMagnitude)
        #expect(copy.double == 1.7976931348623157e308)
        #expect(copy.date == Date(timeIntervalSince1970: 1_700_000_000.25))
        #expect(copy.data == holder.data)
        #expect(copy.url == holder.url)
        #expect(copy.uuidValue == holder.uuidValue)
        #expect(copy.color == ModelColor(rgba: 0x1DD2_AFFF))
        #expect(copy.mood == .happy && copy.priority == .high)
        #expect(copy.optionalString == "present" && copy.optionalInt == -42 && copy.optionalMood == .angry)
        #expect(copy.optionalDate == Date(timeIntervalSince1970: -86_400.5))
        #expect(copy.numbers == [1.5, -2, 0, 1e-300, .pi])
        #expect(copy.child?.uuid == holder.child?.uuid && copy.child?.name == "only child")
        #expect(copy.children.map(\.uuid) == holder.children.map(\.uuid))
        #expect(copy.children[1].name == "second")
        #expect(copy.child?.scope === replica)
    }

    @Test func everyValueTypeAtItsMinimumRoundTrips() throws {
        let (scope, holder, replica, copy) = makePair()
        holder.optionalString = "x"
        holder.optionalInt = 1
        holder.optionalDate = Date()
        holder.optionalMood = .calm
        holder.child = ValueChild()
        holder.children = [ValueChild()]
        holder.bool = true
        try sync(scope, to: replica)

        holder.string = ""
        holder.bool = false
        holder.int = .min
        holder.int8 = .min
        holder.int16 = .min
        holder.int32 = .min
        holder.int64 = .min
        holder.uint = 1   // the minimum, 0, is the default: set something else first
        holder.uint8 = 1
        holder.uint16 = 1
        holder.uint32 = 1
        holder.uint64 = 1
        holder.float = -.leastNormalMagnitude
        holder.double = -.leastNonzeroMagnitude
        holder.date = Date(timeIntervalSince1970: -1_000_000_000)
        holder.color = .clear
        holder.mood = .angry
        holder.priority = .low
        holder.optionalString = nil
        holder.optionalInt = nil
        holder.optionalDate = nil
        holder.optionalMood = nil
        holder.numbers = [-.greatestFiniteMagnitude]
        holder.child = nil
        holder.children = []
        try sync(scope, to: replica)
        holder.uint = .min
        holder.uint8 = .min
        holder.uint16 = .min
        holder.uint32 = .min
        holder.uint64 = .min
        try sync(scope, to: replica)

        #expect(copy.int == .min && copy.int8 == .min && copy.int16 == .min && copy.int32 == .min && copy.int64 == .min)
        #expect(copy.uint == 0 && copy.uint8 == 0 && copy.uint16 == 0 && copy.uint32 == 0 && copy.uint64 == 0)
        #expect(copy.float == -.leastNormalMagnitude)
        #expect(copy.double == -.leastNonzeroMagnitude)
        #expect(copy.date == Date(timeIntervalSince1970: -1_000_000_000))
        #expect(copy.color == .clear && copy.mood == .angry && copy.priority == .low)
        #expect(copy.optionalString == nil && copy.optionalInt == nil && copy.optionalDate == nil && copy.optionalMood == nil)
        #expect(copy.numbers == [-.greatestFiniteMagnitude])
        #expect(copy.child == nil && copy.children.isEmpty)
        #expect(replica.count == 1)   // the children left the replica too
    }

    @Test func floatGoesOutAsItsShortestDecimal() throws {
        let (scope, holder, replica, copy) = makePair()
        holder.float = 0.1
        let changeSet = try sync(scope, to: replica)
        #expect(changeSet.fragments[0].properties["float"] == .double(0.1))
        #expect(copy.float == Float(0.1))
    }

    @Test func wireValuesHaveTheProtocolTypes() {
        #expect(UInt64.max.wireValue() == .uint(.max))
        #expect(Int64.min.wireValue() == .int(.min))
        #expect(ModelColor(rgba: 0x1DD2_AFFF).wireValue() == .int(500_346_879))
        #expect(ValuePriority.high.wireValue() == .int(7))
        #expect(ValueMood.happy.wireValue() == .string("😀 smile"))
        #expect(Date(timeIntervalSince1970: 12.5).wireValue() == .double(12.5))
        #expect(Data([0, 255]).wireValue() == .string("AP8="))
        #expect(Optional<Int>.none.wireValue() == .null)
        #expect([1.5, 2].wireValue() == .array([.double(1.5), .double(2)]))
        #expect(UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!.wireValue() == .string("3f2504e0-4f89-11d3-9a0c-0305e82c3301"))
    }

    @Test(arguments: [
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14T22:13:20.500Z", 1_700_000_000.5),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000.0),
    ])
    func datesAcceptISO8601Input(text: String, seconds: Double) throws {
        let (_, holder, replica, copy) = makePair()
        try replica.apply([SyncFragment(kind: .change, uuid: holder.uuid, className: "ValueHolder",
                                        properties: ["date": .string(text), "optionalDate": .string(text)])])
        #expect(copy.date == Date(timeIntervalSince1970: seconds))
        #expect(copy.optionalDate == Date(timeIntervalSince1970: seconds))
    }

    @Test func integersAcceptIntegralNumbersOfAnyWireKind() throws {
        let (_, holder, replica, copy) = makePair()
        try replica.apply([SyncFragment(kind: .change, uuid: holder.uuid, className: "ValueHolder",
                                        properties: ["int8": .double(-128), "uint64": .uint(.max), "int": .double(1e15)])])
        #expect(copy.int8 == -128 && copy.uint64 == .max && copy.int == 1_000_000_000_000_000)
    }

    /// The error applying one property gives, or nil. The replica is unchanged either way when it throws.
    func applyError(_ property: String, _ wire: JSON) -> ModelError? {
        let (_, holder, replica, copy) = makePair()
        let before = replica.stateJSON()
        do {
            try replica.apply([
                SyncFragment(kind: .change, uuid: holder.uuid, className: "ValueHolder", properties: ["string": .string("changed")]),
                SyncFragment(kind: .change, uuid: holder.uuid, className: "ValueHolder", properties: [property: wire]),
            ])
            return nil
        } catch {
            #expect(copy.string == "")
            #expect(replica.stateJSON() == before)
            return error
        }
    }

    @Test(arguments: [
        ("string", JSON.int(1)), ("bool", .int(1)), ("bool", .string("true")),
        ("int", .string("5")), ("int64", .bool(true)), ("uint8", .array([])), ("float", .string("1.5")),
        ("date", .string("yesterday")), ("date", .bool(false)), ("data", .string("not base64!")),
        ("data", .int(3)), ("url", .int(3)), ("uuidValue", .string("not-a-uuid")), ("color", .string("#ff0000")),
        ("mood", .string("bored")), ("mood", .int(0)), ("priority", .int(3)), ("priority", .string("high")),
        ("optionalInt", .string("1")), ("optionalMood", .string("nope")), ("numbers", .double(1)),
        ("numbers", .array([.double(1), .string("2")])), ("child", .int(1)), ("children", .string("x")),
        ("children", .array([.int(1)])),
    ] as [(String, JSON)])
    func wrongWireTypesAreTypedErrors(property: String, wire: JSON) {
        let error = applyError(property, wire)
        guard case .wrongType(let name, _, _)? = error else {
            Issue.record("\(property) = \(wire): expected wrongType, got \(String(describing: error))")
            return
        }
        #expect(name == property)
        #expect(error?.description.contains(property) == true)
    }

    @Test(arguments: [
        ("int8", JSON.int(128)), ("int8", .int(-129)), ("int16", .int(32768)), ("int32", .int(-2_147_483_649)),
        ("int64", .uint(.max)), ("int", .uint(UInt64(Int64.max) + 1)), ("uint", .int(-1)), ("uint8", .int(256)),
        ("uint16", .int(-1)), ("uint32", .int(4_294_967_296)), ("uint64", .int(-1)), ("int", .double(1.5)),
        ("int", .double(1e19)), ("uint8", .double(.infinity)), ("color", .int(-1)), ("color", .int(4_294_967_296)),
        ("optionalInt", .double(0.5)),
    ] as [(String, JSON)])
    func outOfRangeNumbersAreTypedErrors(property: String, wire: JSON) {
        let error = applyError(property, wire)
        guard case .outOfRange(let name, _, _)? = error else {
            Issue.record("\(property) = \(wire): expected outOfRange, got \(String(describing: error))")
            return
        }
        #expect(name == property)
    }

    @Test func referencesToMissingOrWrongObjectsAreTypedErrors() {
        let dangling = applyError("child", .string(UUID().uuidString))
        guard case .danglingReference(let property, _)? = dangling else {
            Issue.record("expected danglingReference, got \(String(describing: dangling))")
            return
        }
        #expect(property == "child")

        let (_, holder, replica, copy) = makePair()
        // The root is a ValueHolder, not a ValueChild.
        #expect(throws: ModelError.wrongClass(property: "child", expected: "ValueChild", got: "ValueHolder")) {
            try replica.apply([SyncFragment(kind: .change, uuid: holder.uuid, className: "ValueHolder",
                                            properties: ["child": .string(holder.uuid.uuidString)])])
        }
        #expect(copy.child == nil)
    }

    @Test func decodingDirectlyGivesTypedErrors() {
        let resolver: ModelResolver = { _ in nil }
        #expect(throws: ModelError.outOfRange(property: "p", value: "300", type: "UInt8")) {
            try UInt8.decode(wire: .int(300), property: "p", resolver: resolver)
        }
        #expect(throws: ModelError.self) { try Bool.decode(wire: .null, property: "p", resolver: resolver) }
        #expect(throws: ModelError.self) { try ValuePriority.decode(wire: .int(2), property: "p", resolver: resolver) }
        #expect((try? Int16.decode(wire: .int(-32768), property: "p", resolver: resolver)) == .min)
        #expect((try? ValueMood?.decode(wire: .null, property: "p", resolver: resolver)) == .some(nil))
    }
}
