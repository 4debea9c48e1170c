import Contrail

/// Chapter 2: change sets of sync fragments, and atomic change sets.
@MainActor
func changeSetChapter(_ narrator: Narrator) async {
    narrator.chapter("Change sets and sync fragments")
    let canvas = Canvas()
    let scope = Scope(name: "Canvas")
    scope.root = canvas
    scope.onChanges(narrator) { changeSet in
        narrator.say("change set\(changeSet.isAtomic ? " (atomic)" : "")\(changeSet.message.map { " '\($0)'" } ?? ""):")
        for fragment in changeSet.fragments {
            narrator.say("  \(fragment.json.jsonString)")
        }
    }
    let shape = Shape()
    canvas.shapes.append(shape)
    shape.x = 5
    await ChangeDelivery.main.drain()

    shape.x = 6
    shape.x = 7   // the last value wins
    canvas.name = "Sketch"
    await ChangeDelivery.main.drain()

    narrator.say("adding and removing a shape in the same turn records nothing:")
    canvas.shapes.append(Shape())
    canvas.shapes.removeLast()
    await ChangeDelivery.main.drain()

    narrator.chapter("Atomic change sets")
    let cart = Cart()
    let cartScope = Scope(name: "Cart")
    cartScope.root = cart
    cartScope.onChanges(narrator) { changeSet in
        narrator.say("change set atomic=\(changeSet.isAtomic) '\(changeSet.message ?? "")' with \(changeSet.fragments.count) fragments")
    }
    let item = Item()
    item.title = "Tea"
    item.price = 4.5
    cartScope.modifyAtomically(message: "add tea") {
        cart.items.append(item)
        cart.total += item.price
    }
    narrator.say("the server applies all of it or none of it")
    await ChangeDelivery.main.drain()
}
