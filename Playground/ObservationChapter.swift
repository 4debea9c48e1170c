import Contrail

/// Chapter 1: models and observation, as in the Jetstream README's quick start.
@MainActor
func observationChapter(_ narrator: Narrator) async throws {
    narrator.chapter("Models and observation")
    let canvas = Canvas()
    let scope = Scope(name: "Canvas")
    scope.root = canvas

    // Callbacks receive the observed object: the closures capture neither the shape nor the canvas,
    // so a removed shape is freed once nothing else holds it.
    try canvas.observeCollectionAdd(narrator, \.shapes) { shape, index in
        narrator.say("canvas: shape added at index \(index)")
        _ = try? shape.observeChange(narrator, \.x, \.y, \.width, \.height) { shape in
            narrator.say("shape view: frame is now (\(shape.x), \(shape.y), \(shape.width), \(shape.height))  [queued: once per turn]")
        }
        _ = try? shape.observeChange(narrator, \.color) { shape in
            narrator.say("shape view: color is now \(shape.color)")
        }
        shape.observeDetach(narrator) { scope in
            narrator.say("shape view: removed from scope '\(scope.name)'")
        }
    }
    canvas.observeTreeChange(narrator) { _ in
        narrator.say("canvas view: something in the tree changed, re-render")
    }

    let shape = Shape()
    canvas.shapes.append(shape)
    await ChangeDelivery.main.drain()

    narrator.say("setting x, y, width and height in one turn…")
    try shape.observeChangeImmediately(narrator, \.x) { shape in narrator.say("immediate observer: x = \(shape.x)") }
    shape.x = 10
    shape.y = 20
    shape.width = 50
    shape.height = 50
    await ChangeDelivery.main.drain()

    shape.color = ModelColor(rgba: 0x1DD2_AFFF)
    await ChangeDelivery.main.drain()

    narrator.say("removing the shape…")
    canvas.shapes.removeAll()
    await ChangeDelivery.main.drain()
}
