import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

final class Sketch: ModelObject {
    @Property var title = ""
}

/// Presence (Protocol §8.20) through the Swift client: `scope.presence` publishes this replica's
/// value and observes the other sessions' (callbacks and an `AsyncSequence`), never records a change
/// set or a log record, refuses values over the server's limit, and never goes to a server that does
/// not offer it.
@MainActor
@Suite("Client presence")
struct PresenceClientTests {
    private func replica(_ server: ContrailServer, name: String = "Board") async throws -> (Client, Scope) {
        let scope = Scope(name: name)
        scope.root = Sketch()
        return (try await Client.sync(scope, connector: server.connector()), scope)
    }

    @Test func peersJoinChangeAndLeaveWithEventsAndAStream() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (clientA, a) = try await replica(server)
        let (clientB, b) = try await replica(server)
        let watcher = NSObject()
        var events: [PresenceEvent] = []
        let token = b.presence.onChange(watcher) { events.append($0) }
        try a.presence.publish(["name": "Ada", "cursor": [1, 2]])
        #expect(await eventually { b.presence.peers.first?.value == ["name": "Ada", "cursor": [1, 2]] })
        let peer = try #require(b.presence.peers.first)
        #expect(b.presence.peers.count == 1 && peer.user == nil)
        // The stream starts with the peers already here.
        var stream = b.presence.events().makeAsyncIterator()
        #expect(await stream.next() == .joined(peer))
        try a.presence.publish(["name": "Ada", "cursor": [5, 6]])
        #expect(await eventually { b.presence.peers.first?.value == ["name": "Ada", "cursor": [5, 6]] })
        let moved = PresencePeer(id: peer.id, value: ["name": "Ada", "cursor": [5, 6]])
        #expect(await stream.next() == .changed(moved))
        #expect(a.presence.peers.isEmpty, "b published nothing: a sees nobody")
        await clientA.close()
        #expect(await eventually { b.presence.peers.isEmpty })
        #expect(await stream.next() == .left(moved))
        #expect(events == [.joined(peer), .changed(moved), .left(moved)])
        token.cancel()
        await clientB.close()
        await server.stop()
    }

    @Test func manyQuickChangesArriveAsTheLatestValue() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (clientA, a) = try await replica(server)
        let (clientB, b) = try await replica(server)
        let watcher = NSObject()
        var seen: [JSON] = []
        b.presence.onChange(watcher) { seen.append($0.peer.value) }
        try a.presence.publish(["x": 0])
        #expect(await eventually { b.presence.peers.first?.value == ["x": 0] })
        for x in 1...200 { try a.presence.publish(["x": .int(Int64(x))]) }
        #expect(await eventually { b.presence.peers.first?.value == ["x": 200] })
        #expect(seen.count < 50, "throttled: \(seen.count) of 201 changes shown")
        await clientA.close(); await clientB.close(); await server.stop()
    }

    @Test func presenceRecordsNoChangeSetAndNoLogRecord() async throws {
        let server = try ContrailServer(options: Wire.options())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-client-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("board.log")
        let scope = Scope(name: "Board")
        let sketch = Sketch()
        scope.root = sketch
        let log = FragmentLog(url: url)
        _ = try log.attach(to: scope)
        let client = try await Client.sync(scope, connector: server.connector())
        let (clientB, b) = try await replica(server)
        let watcher = NSObject()
        var changeSets = 0
        scope.onChanges(watcher) { _ in changeSets += 1 }
        let history = scope.history.count
        try scope.presence.publish(["note": "presence-marker-51c2"])
        #expect(await eventually { b.presence.peers.first?.value == ["note": "presence-marker-51c2"] })
        #expect(changeSets == 0 && scope.history.count == history && client.session?.pendingChangeSets == 0)
        sketch.title = "synced-marker-51c2"   // positive control
        #expect(await eventually { client.session?.pendingChangeSets == 0 && changeSets == 1 })
        try await log.waitUntilDurable()
        try log.close()
        let logged = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        #expect(logged.contains("synced-marker-51c2"))
        #expect(!logged.contains("presence-marker-51c2"))
        await client.close(); await clientB.close(); await server.stop()
    }

    @Test func aValueOverTheServersLimitIsRefusedLocally() async throws {
        var options = Wire.options()
        options.maxPresenceBytes = 64
        let server = try ContrailServer(options: options)
        let (client, scope) = try await replica(server)
        #expect(scope.presence.maxValueBytes == 64, "the server's advertised limit")
        let long: JSON = ["name": .string(String(repeating: "x", count: 100))]
        #expect(throws: PresenceError.valueTooLarge(bytes: long.serialized().count, limit: 64)) {
            try scope.presence.publish(long)
        }
        #expect(scope.presence.value == nil)
        try scope.presence.publish(["name": "Ada"])   // positive control
        #expect(scope.presence.value == ["name": "Ada"])
        await client.close(); await server.stop()
    }

    @Test func detachingTheScopeLeavesItsPresence() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (clientA, a) = try await replica(server)
        let (clientB, b) = try await replica(server)
        try a.presence.publish(["name": "Ada"])
        try b.presence.publish(["name": "Bo"])
        #expect(await eventually { a.presence.peers.count == 1 && b.presence.peers.count == 1 })
        try await clientA.session?.detach(a)
        #expect(await eventually { b.presence.peers.isEmpty })
        #expect(a.presence.peers.isEmpty, "a no longer sees b either")
        await clientA.close(); await clientB.close(); await server.stop()
    }

    @Test func aResumedConnectionPublishesAgain() async throws {
        let server = try ContrailServer(options: Wire.options())
        let connector = SwitchableConnector(server.connector())
        let scope = Scope(name: "Board")
        scope.root = Sketch()
        let clientA = try await Client.sync(scope, connector: connector)
        let (clientB, b) = try await replica(server)
        try scope.presence.publish(["name": "Ada"])
        #expect(await eventually { b.presence.peers.count == 1 })
        await connector.cut()
        #expect(await eventually { b.presence.peers.isEmpty && scope.presence.peers.isEmpty }, "a left when its connection ended")
        connector.restore()
        #expect(await eventually { b.presence.peers.first?.value == ["name": "Ada"] }, "back after the resume")
        await clientA.close(); await clientB.close(); await server.stop()
    }

    /// A Jetstream server lists no extensions: presence stays local. Positive control: a server
    /// that lists `Presence` gets it.
    @Test(arguments: [false, true])
    func presenceGoesOnlyToAServerThatOffersIt(offered: Bool) async throws {
        let harness = ClientTests()
        let connector = ScriptedConnector()
        let (client, session, peer) = try await harness.connect(connector, extensions: offered ? ["ScopeDetach", "Presence"] : [])
        let (scope, board) = harness.makeScope()
        try await harness.fetch(scope, session: session, peer: peer)
        try scope.presence.publish(["name": "Ada"])
        board.title = "after"
        var received: [String] = []
        while let message = await peer.nextNonPing() {
            received.append(message.typeName)
            if case .scopeSync = message { break }
        }
        #expect(received == (offered ? ["Presence", "ScopeSync"] : ["ScopeSync"]))
        await client.close()
    }
}
