import Contrail
import ContrailServer
import Foundation

/// The last chapter: an embedded server on a free loopback port (or the server at `CONTRAIL_SERVER`,
/// e.g. `ws://127.0.0.1:3000/` of a `contrail serve` whose `/demo` is open in a browser), two
/// clients, and one canvas edited in the first while the second's observers fire.
@MainActor
func syncChapter(_ narrator: Narrator) async throws {
    narrator.chapter("Live sync between two clients")
    var server: ContrailServer?
    let url: String
    if let outside = ProcessInfo.processInfo.environment["CONTRAIL_SERVER"], !outside.isEmpty {
        url = outside
        narrator.say("using the server at \(url)")
    } else {
        let embedded = try ContrailServer(options: ServerOptions())
        url = "ws://127.0.0.1:\(try await embedded.start())/"
        server = embedded
        narrator.say("server listening on \(url)")
    }

    let aliceScope = Scope(name: "Canvas")
    let aliceCanvas = Canvas()
    aliceScope.root = aliceCanvas
    let alice = try await Client.sync(aliceScope, url: url)

    let bobScope = Scope(name: "Canvas")
    let bobCanvas = Canvas()
    bobScope.root = bobCanvas
    let bob = try await Client.sync(bobScope, url: url)
    narrator.say("alice and bob fetched scope 'Canvas' (root \(bobCanvas.uuid.uuidString.lowercased().prefix(8))…)")

    let seen = Seen()
    try bobCanvas.observeCollectionAdd(narrator, \.shapes) { shape, index in
        narrator.say("bob: a shape arrived at index \(index)")
        _ = try? shape.observeChange(narrator, \.x, \.y) { shape in
            narrator.say("bob: shape moved to (\(shape.x), \(shape.y))")
            seen.moves += 1
        }
    }
    try bobCanvas.observeChange(narrator, \.name) { canvas in
        narrator.say("bob: canvas is now called '\(canvas.name ?? "")'")
    }

    narrator.say("alice adds a shape and names the canvas…")
    let shape = Shape()
    aliceScope.modify(message: "add shape") {
        aliceCanvas.shapes.append(shape)
        aliceCanvas.name = "Shared sketch"
    }
    try await seen.wait { bobCanvas.name == aliceCanvas.name && bobCanvas.shapes.contains { $0.uuid == shape.uuid } }

    narrator.say("alice drags the shape…")
    shape.x = 40
    shape.y = 25
    try await seen.wait { seen.moves >= 1 && bobCanvas.shapes.first { $0.uuid == shape.uuid }?.x == 40 }

    narrator.say("replicas equal: \(aliceScope.stateJSON() == bobScope.stateJSON())")
    await alice.close()
    await bob.close()
    await server?.stop()
}

/// What bob's observers have seen, and a bounded wait for it.
@MainActor
final class Seen {
    var moves = 0

    struct TimedOut: Error {}

    /// Delivers queued notifications until `condition` holds, for at most five seconds.
    func wait(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut() }
            await ChangeDelivery.main.drain()
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
