import Contrail
import Foundation

enum ShapeKind: String, PropertyValue, Sendable { case rectangle, circle }

final class Shape: ModelObject {
    @Property var x: Double = 0
    @Property var y: Double = 0
    @Property var width: Double = 100
    @Property var height: Double = 100
    @Property var color = ModelColor.red
    @Property var kind = ShapeKind.rectangle
    @Property(local: true) var isSelected = false
    /// A plain stored property: not observable.
    var plain = 0.0
    var area: Double { width * height }
    override class var compositeProperties: [CompositeProperty] {
        [CompositeProperty(\Shape.area, dependsOn: \Shape.width, \Shape.height)]
    }
}

final class Canvas: ModelObject {
    @Property var name: String?
    @Property var shapes: [Shape] = []
    @Property var highlighted: Shape?
    /// A plain stored collection: not observable.
    var scratch: [Shape] = []
}

/// A node for cycles and deep trees.
final class Node: ModelObject {
    @Property var label = ""
    @Property var next: Node?
    @Property var children: [Node] = []
}

/// Counts callbacks.
@MainActor
final class Counter {
    var count = 0
    var events: [String] = []
}
