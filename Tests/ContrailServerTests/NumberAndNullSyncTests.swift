import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A model with floating-point and non-optional values, for the NaN/infinity and null rules.
final class Gauge: ModelObject {
    @Property var reading = 1.5
    @Property var level: Float = 2
    @Property var label = "unset"
    @Property var count = 7
    @Property var cards: [Card] = []
}

/// Non-finite numbers and nulls, end to end: Contrail clients and a raw Jetstream peer against a
/// real `ContrailServer` over in-memory transports.
@MainActor
@Suite struct NumberAndNullSyncTests {
    func replica(_ server: ContrailServer) async throws -> (Client, Scope, Gauge) {
        let scope = Scope(name: "Gauge")
        let gauge = Gauge()
        scope.root = gauge
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        return (client, scope, gauge)
    }

    func converged(_ replicas: [(Client, Scope, Gauge)]) async -> Bool {
        await eventually(.seconds(60)) {
            replicas.allSatisfy { ($0.0.session?.pendingChangeSets ?? 1) == 0 }
                && Set(replicas.map { $0.1.stateJSON() }).count == 1
        }
    }

    @Test func nanAndInfinitiesReachEveryReplicaAndARefetch() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = try await replica(server)
        let b = try await replica(server)
        a.2.reading = .nan
        a.2.level = .infinity
        #expect(await eventually(.seconds(60)) { b.2.reading.isNaN && b.2.level == .infinity })
        a.2.reading = -.infinity
        a.2.level = -.infinity
        #expect(await eventually(.seconds(60)) { b.2.reading == -.infinity && b.2.level == -.infinity })
        #expect(await converged([a, b]))
        // The server holds the wire forms, and a fresh replica reads them back.
        let state = try #require(await server.state(ofScope: "Gauge"))
        let root = a.2.uuid.uuidString.lowercased()
        #expect(state["objects"]?[root]?["properties"]?["reading"] == .double(-.infinity))
        let c = try await replica(server)
        #expect(c.2.reading == -.infinity && c.2.level == -.infinity)
        a.2.reading = .nan
        #expect(await eventually(.seconds(60)) { c.2.reading.isNaN && b.2.reading.isNaN })
        #expect(await server.state(ofScope: "Gauge")?["objects"]?[root]?["properties"]?["reading"] == .null)
        #expect(await converged([a, b, c]))
        await a.0.close(); await b.0.close(); await c.0.close(); await server.stop()
    }

    @Test func nullsFromAJetstreamPeerTakeTheDeclaredDefaultsOnEveryReplica() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = try await replica(server)
        let b = try await replica(server)
        a.2.label = "set"
        a.2.count = 3
        a.2.reading = 9
        a.2.cards = [Card()]
        #expect(await eventually(.seconds(60)) { b.2.label == "set" && b.2.cards.count == 1 })
        // An original Jetstream client clears values with null (and sends NaN as null).
        let peer = ServerTestClient(server: server)
        try await peer.createSession()
        let (_, fetched) = try await peer.fetch("Gauge", index: 1)
        let root = try #require(fetched["rootUUID"]?.stringValue)
        let reply = try await peer.sync(index: 2, fragments: [
            Wire.fragment("change", root, "Gauge", ["label": .null, "count": .null, "reading": .null, "level": .int(4)]),
        ])
        #expect(reply["fragmentReplies"] == [[:]], "the server accepts the nulls")
        for gauge in [a.2, b.2] {
            #expect(await eventually(.seconds(60)) { gauge.level == 4 }, "the batch is applied, not refused")
            #expect(gauge.label == "unset" && gauge.count == 7 && gauge.reading.isNaN)
        }
        #expect(await converged([a, b]))
        // A replica that fetches after the nulls reads the same.
        let c = try await replica(server)
        #expect(c.2.label == "unset" && c.2.count == 7 && c.2.reading.isNaN && c.2.level == 4)
        // Positive control: a wrong type is still refused.
        let refused = try await peer.sync(index: 3, fragments: [Wire.fragment("change", root, "Gauge", ["count": "many"])])
        #expect(refused["fragmentReplies"]?[0]?["error"] != nil)
        await a.0.close(); await b.0.close(); await c.0.close(); await server.stop()
    }
}
