import Contrail
import ContrailNATS
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Big scopes in a cluster (issue 26, item 4; Protocol §8.25): a cluster server streams a state
/// larger than one part in `ScopeStateChunk`s, with progress, as a single server does, whichever
/// server of the cluster wrote it.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterBigScopeTests {
    func makeServer(_ nats: NATSServerProcess, partObjects: Int) throws -> ContrailServer {
        try clusterServer(nats) { options, _ in options.stateChunkObjects = partObjects }
    }

    @Test func aStateWrittenThroughOneServerStreamsInPartsFromTheOther() async throws {
        let nats = try await NATSServerProcess.start()
        let one = try makeServer(nats, partObjects: 100)
        let two = try makeServer(nats, partObjects: 100)
        let count = 2_000
        let (writer, _, deck) = try await ClusterServerTests().makeReplica(one, name: "BigDeck")
        deck.cards = (0..<count).map { number in
            let slide = Slide()
            slide.votes = number
            return slide
        }
        #expect(await eventually(.seconds(60)) { writer.session?.pendingChangeSets == 0 })

        let scope = Scope(name: "BigDeck")
        let fetched = Deck()
        scope.root = fetched
        var options = ClientOptions()
        options.replyTimeout = .seconds(60)
        let reader = Client(connector: two.connector(), options: options)
        let session = try await reader.connect()
        let record = try await FetchRecord.fetch(scope, in: session) { fetched.cards.count }
        #expect(record.countsDuringFetch == [0])  // the app never sees half a state
        #expect(fetched.cards.count == count)
        #expect(fetched.cards.enumerated().allSatisfy { $1.votes == $0 })
        #expect(record.reports.count >= count / 100, "parts of 100 objects, each reported: \(record.reports.count) reports")
        #expect(record.risesTo(count + 1), "\(record.reports)")
        // Live afterwards, across the servers.
        fetched.cards[7].votes = -7
        #expect(await eventually(.seconds(60)) { deck.cards[7].votes == -7 })
        await writer.close()
        await reader.close()
        await one.stop()
        await two.stop()
        await nats.stop()
    }
}
