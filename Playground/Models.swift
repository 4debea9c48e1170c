import Contrail

/// The Canvas/Shape example of the Jetstream README, in Contrail.
final class Shape: ModelObject {
    @Property var x: Double = 0
    @Property var y: Double = 0
    @Property var width: Double = 100
    @Property var height: Double = 100
    @Property var color = ModelColor.red
}

final class Canvas: ModelObject {
    @Property var name: String?
    @Property var shapes: [Shape] = []
}

/// A checkout cart for the atomic change set chapter.
final class Cart: ModelObject {
    @Property var items: [Item] = []
    @Property var total: Double = 0
}

final class Item: ModelObject {
    @Property var title = ""
    @Property var price: Double = 0
}
