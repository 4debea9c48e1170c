import Contrail
import Foundation

enum ShapeKind: String, PropertyValue, Sendable { case rectangle, circle }

final class Shape: ModelObject {
    @Property var x: Double = 0
    @Property var y: Double = 0
    @Property var width: Double = 100
    @Property var height: Double = 100
    @Property var color = Color.red
    @Property var kind = ShapeKind.rectangle
    @Property(local: true) var isSelected = false
    var area: Double { width * height }
    override class var compositeProperties: [CompositeProperty] {
        [CompositeProperty(\Shape.area, dependsOn: \Shape.width, \Shape.height)]
    }
}

final class Canvas: ModelObject {
    @Property var name: String?
    @Property var shapes: [Shape] = []
    @Property var highlighted: Shape?
}

/// A node for cycles and deep trees.
final class Node: ModelObject {
    @Property var label = ""
    @Property var next: Node?
    @Property var children: [Node] = []
}

/// Every supported value type.
final class Everything: ModelObject {
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
    @Property var color = Color.black
    @Property var kind = ShapeKind.rectangle
    @Property var optionalString: String?
    @Property var optionalInt: Int?
    @Property var numbers: [Double] = []
    @Property var owner: Node?
    @Property var nodes: [Node] = []
}

/// Counts callbacks.
@MainActor
final class Counter {
    var count = 0
    var events: [String] = []
}
