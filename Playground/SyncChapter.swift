import Contrail
import ContrailServer
import Foundation

/// The last chapter: an embedded server on a free loopback port, two clients, and one canvas
/// edited in the first while the second's observers fire.
@MainActor
func syncChapter(_ narrator: Narrator) async throws {
    narrator.chapter("Live sync between two clients")
    let server = try ContrailServer(options: ServerOptions())
    let port = try await server.start()
    let url = "ws://127.0.0.1:\(port)/"
    narrator.say("server listening on \(url)")

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
        seen.renamed = true
    }

    narrator.say("alice adds a shape and names the canvas…")
    let shape = Shape()
    aliceScope.modify(message: "add shape") {
        aliceCanvas.shapes.append(shape)
        aliceCanvas.name = "Shared sketch"
    }
    try await seen.wait { seen.renamed && bobCanvas.shapes.count == 1 }

    narrator.say("alice drags the shape…")
    shape.x = 40
    shape.y = 25
    try await seen.wait { seen.moves >= 1 && bobCanvas.shapes.first?.x == 40 }

    narrator.say("replicas equal: \(aliceScope.stateJSON() == bobScope.stateJSON())")
    await alice.close()
    await bob.close()
    await server.stop()
}

/// What bob's observers have seen, and a bounded wait for it.
@MainActor
final class Seen {
    var moves = 0
    var renamed = false

    struct TimedOut: Error {}

    /// Delivers queued notifications until `condition` holds, for at most five seconds.
    func wait(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut() }
            await NotificationQueue.main.drain()
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
