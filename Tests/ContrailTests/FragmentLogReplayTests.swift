import Contrail
import Foundation
import Testing

/// Restoring records in one pass over their bytes (`LogReplay`): any key order, references in any
/// order, the older layout, and bad records refused whole with a typed error.
@MainActor
@Suite struct FragmentLogReplayTests {
    static let canvasID = "6f7a2c1e-0000-4000-8000-000000000001"
    static let shapeID = "6f7a2c1e-0000-4000-8000-000000000002"
    static let otherID = "6f7a2c1e-0000-4000-8000-000000000003"

    func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-replay-\(UUID().uuidString).log")
    }

    /// A log holding exactly these change-set payloads; restored into a fresh scope.
    func restore(_ payloads: [String]) throws -> (Scope, Result<FragmentLog.RestoreReport, FragmentLogError>) {
        ModelRegistry.register(Canvas.self)
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (file, _) = try LogFile.open(at: url)
        for payload in payloads { try file.append(.changeSet, Array(payload.utf8)) }
        try file.close()
        let scope = Scope(name: "Canvas")
        let log = FragmentLog(url: url)
        let result = Result { () throws(FragmentLogError) in try log.attach(to: scope) }
        try? log.close()
        return (scope, result)
    }

    var snapshot: String {
        #"{"root":"\#(Self.canvasID)","fragments":[{"type":"add","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"name":"c","shapes":["\#(Self.shapeID)"],"highlighted":"\#(Self.shapeID)"}},{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"x":3,"y":4.5}}]}"#
    }

    @Test func forwardReferencesAndAnyKeyOrderRestore() throws {
        // The canvas names its shape before the shape's add; a change comes before its object's add,
        // and one fragment lists its properties before its uuid.
        let changes = #"{"root":"\#(Self.canvasID)","origin":"remote","fragments":[{"type":"change","uuid":"\#(Self.otherID)","clsName":"Shape","properties":{"x":9}},{"properties":{"width":7},"clsName":"Shape","uuid":"\#(Self.shapeID)","type":"change"},{"type":"add","uuid":"\#(Self.otherID)","clsName":"Shape","properties":{"x":1}},{"type":"change","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"shapes":["\#(Self.shapeID)","\#(Self.otherID)"],"unknown":1}}]}"#
        let (scope, result) = try restore([snapshot, changes])
        #expect(try result.get().records == 2)
        let canvas = try #require(scope.root as? Canvas)
        #expect(canvas.uuid.uuidString.lowercased() == Self.canvasID)
        #expect(canvas.name == "c")
        #expect(canvas.shapes.map { $0.uuid.uuidString.lowercased() } == [Self.shapeID, Self.otherID])
        #expect(canvas.highlighted === canvas.shapes.first)
        #expect(canvas.shapes.map(\.x) == [3, 9])
        #expect(canvas.shapes.first?.y == 4.5)
        #expect(canvas.shapes.first?.width == 7)
        #expect(scope.count == 3)
        #expect(scope.history.isEmpty, "a restore publishes no change sets")
    }

    @Test func olderLayoutWithFragmentsFirstRestoresTheSame() throws {
        let older = #"{"fragments":[{"type":"add","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"name":"c","shapes":["\#(Self.shapeID)"]}},{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"x":3}}],"root":"\#(Self.canvasID)"}"#
        let (scope, result) = try restore([older])
        #expect(try result.get().records == 1)
        let canvas = try #require(scope.root as? Canvas)
        #expect(canvas.name == "c")
        #expect(canvas.shapes.map(\.x) == [3])
        #expect(scope.history.isEmpty)
    }

    @Test func badRecordsAreTypedErrorsAndApplyNothing() throws {
        // Positive control: the snapshot alone restores.
        let (good, goodResult) = try restore([snapshot])
        #expect(try goodResult.get().records == 1)
        #expect((good.root as? Canvas)?.shapes.first?.x == 3)

        let wrongType = #"{"root":"\#(Self.canvasID)","fragments":[{"type":"change","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"y":1}},{"type":"change","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"x":"not a number"}}]}"#
        let (scope, result) = try restore([snapshot, wrongType])
        guard case .failure(.apply(let offset, _)) = result else {
            Issue.record("expected an apply error, got \(result)")
            return
        }
        #expect(offset > 16)
        #expect((scope.root as? Canvas)?.shapes.first?.y == 4.5, "the bad record changed nothing, not even its valid first value")

        for (payload, reason) in [
            (#"{"root":null,"fragments":[{"type":"remove","uuid":"\#(Self.shapeID)","clsName":"Shape"}]}"#, "Invalid type"),
            (#"{"root":null,"fragments":[{"type":"add","uuid":"nope","clsName":"Shape"}]}"#, "Invalid uuid"),
            (#"{"root":null,"fragments":[{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape","properties":{"x":{"a":1}}}]}"#, "Property 'x'"),
            (#"{"root":null,"fragments":[{"type":"add","uuid":"\#(Self.shapeID)","clsName":"Shape"}"#, ""),
            (#"{"root":null}"#, "no fragments"),
        ] {
            let (_, result) = try restore([snapshot, payload])
            guard case .failure(.badRecord(_, let message)) = result else {
                Issue.record("expected a bad record for \(payload), got \(result)")
                continue
            }
            #expect(reason.isEmpty || message.contains(reason), "\(message)")
        }
        // An object of an unknown class is kept (Protocol §8.23), but a root must be made.
        let (_, unknownRoot) = try restore([#"{"root":"\#(Self.shapeID)","fragments":[{"type":"add","uuid":"\#(Self.shapeID)","clsName":"NoSuchClass"}]}"#])
        guard case .failure(.apply(_, .unknownClass("NoSuchClass"))) = unknownRoot else {
            Issue.record("expected an apply error for a root of an unknown class, got \(unknownRoot)")
            return
        }
    }
    @Test func propertyOrderClassRunsReferenceOrderAndDuplicateAddsRestoreExactly() throws {
        // The reader guesses the next property name and the class from the fragment before, and
        // resolves references by trying the object added after the last one found: every guess
        // is wrong somewhere here, and each wrong guess must fall back to the exact answer.
        let ids = (0..<6).map { String(format: "6f7a2c1e-0000-4000-8000-1000000000%02d", $0) }
        let keyOrders = [["x", "y", "width"], ["width", "x", "y"], ["y", "isSelected", "zzz", "x", "width"]]
        func value(_ key: String, _ n: Int) -> String {
            switch key {
            case "x": "\(n)"
            case "y": "\(10 + n)"
            case "width": "\(20 + n)"
            case "isSelected": "true"
            default: "1"
            }
        }
        var fragments: [String] = []
        for (n, id) in ids.enumerated() {
            let properties = keyOrders[n % keyOrders.count].map { #""\#($0)":\#(value($0, n))"# }.joined(separator: ",")
            fragments.append(#"{"type":"add","uuid":"\#(id)","clsName":"Shape","properties":{\#(properties)}}"#)
            if n == 2 {  // another class between two runs of shapes
                fragments.append(#"{"type":"change","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"name":"mid"}}"#)
            }
        }
        fragments.append(#"{"type":"add","uuid":"\#(ids[1])","clsName":"Shape","properties":{"height":5}}"#)  // the same object again
        let listed = [ids[3], ids[4], ids[0], ids[5], ids[2], ids[1]]  // not the order they are added in
        let shapes = listed.map { #""\#($0)""# }.joined(separator: ",")
        let canvas = #"{"type":"add","uuid":"\#(Self.canvasID)","clsName":"Canvas","properties":{"name":"c","shapes":[\#(shapes)],"highlighted":"\#(ids[5])"}}"#
        let record = #"{"root":"\#(Self.canvasID)","fragments":[\#(canvas),\#(fragments.joined(separator: ","))]}"#
        let (scope, result) = try restore([record])
        #expect(try result.get().records == 1)
        let root = try #require(scope.root as? Canvas)
        #expect(root.name == "mid")
        #expect(root.shapes.map { $0.uuid.uuidString.lowercased() } == listed)
        #expect(root.highlighted != nil && root.highlighted === root.shapes[3])
        #expect(scope.count == 1 + ids.count, "the second add of a shape is the same object")
        for shape in root.shapes {
            let n = try #require(ids.firstIndex(of: shape.uuid.uuidString.lowercased()))
            #expect([shape.x, shape.y, shape.width] == [Double(n), Double(10 + n), Double(20 + n)], "shape \(n)")
            #expect(shape.height == (n == 1 ? 5 : 100))
            #expect(!shape.isSelected, "a local property is not restored")
            #expect(shape.scope === scope)
            #expect(shape.parents.count == (n == 5 ? 2 : 1))
        }
    }
}
