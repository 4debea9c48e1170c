@testable import Contrail
@testable import ContrailWire
import Foundation
import Observation
import Synchronization
import Testing

/// The restore's fast paths give the same results as the general ones: the usual fragment head
/// read in one compare, numbers stored straight into `Double` properties, the scope's objects
/// looked up in a `UUIDTable` across records, and UUIDs parsed eight digits at a time.
@MainActor
@Suite struct LogReplayFastPathTests {
    static let canvasID = "6f7a2c1e-0000-4000-8000-000000000001"
    static let shapeID = "6f7a2c1e-0000-4000-8000-000000000002"
    static let otherID = "6f7a2c1e-0000-4000-8000-000000000003"

    /// Restores a log of these change-set payloads into `scope` (a fresh one when nil).
    func restore(_ payloads: [String], into scope: Scope = Scope(name: "Canvas")) throws -> (Scope, Result<FragmentLog.RestoreReport, FragmentLogError>) {
        ModelRegistry.register(Canvas.self)
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-fastpath-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: url) }
        let (file, _) = try LogFile.open(at: url)
        for payload in payloads { try file.append(.changeSet, Array(payload.utf8)) }
        try file.close()
        let log = FragmentLog(url: url, fsync: .never)
        let result = Result { () throws(FragmentLogError) in try log.attach(to: scope) }
        try? log.close()
        return (scope, result)
    }

    var snapshot: String {
        #"{"root":"\#(Self.canvasID)","fragments":[{"type":"add","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"name":"c","shapes":["\#(Self.shapeID)"]}},{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"x":3,"y":4.5}}]}"#
    }

    func change(_ uuid: String, _ className: String, _ properties: String) -> String {
        #"{"type":"change","uuid":"\#(uuid)","clsName":"\#(className)","properties":\#(properties)}"#
    }

    func record(_ fragments: String...) -> String {
        #"{"root":"\#(Self.canvasID)","origin":"remote","fragments":[\#(fragments.joined(separator: ","))]}"#
    }

    @Test func numbersAndNullsForDoublesApplyInRecordOrder() throws {
        // x: a number, then null (NaN, decoded by the general path); y: null, then a number; width:
        // an integer; a fragment whose head is the usual one but that has a key after `properties`.
        let changes = record(
            change(Self.shapeID, "Shape", #"{"x":7}"#),
            change(Self.shapeID, "Shape", #"{"y":null}"#),
            change(Self.shapeID, "Shape", #"{"x":null,"y":-2.5e1}"#),
            #"{"type":"change","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"width":12},"extra":[1,{"a":2}]}"#)
        let (scope, result) = try restore([snapshot, changes])
        #expect(try result.get().records == 2)
        let shape = try #require((scope.root as? Canvas)?.shapes.first)
        #expect(shape.x.isNaN)
        #expect(shape.y == -25)
        #expect(shape.width == 12)
    }

    @Test func aBadValueAfterFastOnesChangesNothing() throws {
        let bad = record(change(Self.shapeID, "Shape", #"{"x":8,"y":9}"#), change(Self.shapeID, "Shape", #"{"width":"wide"}"#))
        let (scope, result) = try restore([snapshot, bad])
        guard case .failure(.apply) = result else {
            Issue.record("expected an apply error, got \(result)")
            return
        }
        let shape = try #require((scope.root as? Canvas)?.shapes.first)
        #expect(shape.x == 3 && shape.y == 4.5, "the numbers before the bad value were not stored")
        // Positive control: the same record without the bad value applies.
        let good = record(change(Self.shapeID, "Shape", #"{"x":8,"y":9}"#))
        let (restored, goodResult) = try restore([snapshot, good])
        #expect(try goodResult.get().records == 2)
        #expect((restored.root as? Canvas)?.shapes.first?.x == 8)
    }

    @Test func malformedNumbersAreBadRecords() throws {
        for number in ["-", "01", "1.", "1e", "-x"] {
            let (scope, result) = try restore([snapshot, record(change(Self.shapeID, "Shape", #"{"y":1,"x":\#(number)}"#))])
            guard case .failure(.badRecord) = result else {
                Issue.record("\(number): expected a bad record, got \(result)")
                continue
            }
            #expect((scope.root as? Canvas)?.shapes.first?.y == 4.5, "\(number): nothing of the record applied")
        }
    }

    @Test func headsThatDifferFromTheUsualOneStillRestore() throws {
        // Another class between runs of one, whitespace, keys in another order, an uppercase UUID.
        let changes = record(
            change(Self.shapeID, "Shape", #"{"x":1}"#),
            change(Self.canvasID, "Canvas", #"{"name":"renamed"}"#),
            #"{ "type" : "change", "uuid" : "\#(Self.shapeID)", "clsName" : "Shape", "properties" : { "y" : 2 } }"#,
            #"{"uuid":"\#(Self.shapeID)","type":"change","clsName":"Shape","properties":{"width":3}}"#,
            change(Self.shapeID.uppercased(), "Shape", #"{"height":4}"#))
        let (scope, result) = try restore([snapshot, changes])
        #expect(try result.get().records == 2)
        let canvas = try #require(scope.root as? Canvas)
        let shape = try #require(canvas.shapes.first)
        #expect(canvas.name == "renamed")
        #expect([shape.x, shape.y, shape.width, shape.height] == [1, 2, 3, 4])
    }

    @Test func registeredObserversHearRestoredNumbers() throws {
        // The scope already holds the logged root (by identity taken over from the log), observed.
        let scope = Scope(name: "Canvas")
        let canvas = Canvas()
        let shape = Shape()
        canvas.shapes = [shape]
        scope.root = canvas
        final class Counter { var immediate = 0 }
        let counter = Counter()
        let token = try shape.observeChangeImmediately(counter, \.x) { counter.immediate += 1 }
        let tracked = ModelObservableTests.Fires()
        withObservationTracking { _ = shape.x } onChange: { tracked.count.add(1, ordering: .relaxed) }
        let shapeID = shape.uuid.uuidString.lowercased()
        let changes = #"{"root":"\#(Self.canvasID)","origin":"remote","fragments":[\#(change(shapeID, "Shape", #"{"x":11}"#)),\#(change(shapeID, "Shape", #"{"y":12}"#))]}"#
        let (_, result) = try restore([changes], into: scope)
        #expect(try result.get().records == 1)
        #expect(shape.x == 11 && shape.y == 12)
        #expect(counter.immediate == 1, "the observer of x heard the restored x once (not y)")
        #expect(tracked.value == 1)
        token.cancel()
    }

    @Test func aDetachedObjectIsNotFoundAgainThroughTheCache() throws {
        // Record 2 changes the shape (the cache learns it), record 3 removes it from the canvas,
        // record 4 changes it (skipped: no longer in the scope), record 5 adds it again: a new
        // object with the add's values, not the detached one.
        let (scope, result) = try restore([
            snapshot,
            record(change(Self.shapeID, "Shape", #"{"x":5}"#)),
            record(change(Self.canvasID, "Canvas", #"{"shapes":[]}"#)),
            record(change(Self.shapeID, "Shape", #"{"x":7}"#)),
            record(#"{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"y":1}}"#,
                   change(Self.canvasID, "Canvas", #"{"shapes":["\#(Self.shapeID)"]}"#)),
        ])
        #expect(try result.get().records == 5)
        let shape = try #require((scope.root as? Canvas)?.shapes.first)
        #expect(shape.x == 0, "a new object: neither 5 nor 7")
        #expect(shape.y == 1)
        #expect(scope.object(for: UUID(uuidString: Self.shapeID)!) === shape)
    }

    @Test func uuidTableFindsWhatWasStoredAndGrows() {
        var table = UUIDTable<Int>()
        let uuids = (0..<5_000).map { _ in UUID() } + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))]
        // Sequential UUIDs differ in one byte only: they must spread too.
        let sequential = (1...1_000).map { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012x", $0))! }
        for (index, uuid) in (uuids + sequential).enumerated() { #expect(table.insert(index, for: uuid) == nil) }
        #expect(table.count == uuids.count + sequential.count)
        for (index, uuid) in (uuids + sequential).enumerated() where table[uuid] != index {
            Issue.record("\(uuid) holds \(String(describing: table[uuid])), expected \(index)")
        }
        #expect(table.insert(-1, for: uuids[3]) == 3, "an insert keeps the value held")
        table.update(-1, for: uuids[3])
        #expect(table[uuids[3]] == -1)
        #expect(table[UUID()] == nil)
        #expect(UUIDTable<Int>()[uuids[0]] == nil)
    }

    @Test func wireUUIDParsingMatchesFoundation() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(UUID(wireString: uuid.uuidString) == uuid)
            #expect(UUID(wireString: uuid.uuidString.lowercased()) == uuid)
        }
        #expect(UUID(wireString: "FFFFFFFF-ffff-AbCd-0000-0123456789aF") == UUID(uuidString: "FFFFFFFF-FFFF-ABCD-0000-0123456789AF"))
        // Every byte that is not a hex digit, at every digit position, is refused.
        let valid = Array("0123abcd-ef45-6789-ABCD-EF0123456789".utf8)
        #expect(valid.withUnsafeBufferPointer { UUID(wireBytes: $0) } == UUID(uuidString: String(decoding: valid, as: UTF8.self)))
        let hex = Set("0123456789abcdefABCDEF".utf8)
        var accepted: [String] = []
        for position in valid.indices where ![8, 13, 18, 23].contains(position) {
            for byte in UInt8.min...UInt8.max where !hex.contains(byte) {
                var bytes = valid
                bytes[position] = byte
                if bytes.withUnsafeBufferPointer({ UUID(wireBytes: $0) }) != nil { accepted.append("\(byte) at \(position)") }
            }
        }
        #expect(accepted.isEmpty)
        #expect(UUID(wireString: "0123abcd-ef45-6789-ABCD-EF012345678") == nil)
        #expect(UUID(wireString: "0123abcd_ef45-6789-ABCD-EF0123456789") == nil)
    }
}
