import Contrail
import ContrailNATS
@testable import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Group commit: change sets of one server's sessions that arrive while a publish of their scope
/// is in flight go out together as one log message, each applied once with its own reply.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterGroupCommitTests {
    @Test func aBatchKeepsEachChangeSetAndABatchOfOneIsAPlainChangeSet() throws {
        let root = UUID()
        let one = ClusterEntry.changeSet(fragments: [SyncFragment(kind: .change, uuid: root, className: "Deck", properties: ["score": 1])],
                                         atomic: false, id: UUID())
        let two = ClusterEntry.changeSet(fragments: [SyncFragment(kind: .change, uuid: root, className: "Deck", properties: ["title": "x"]),
                                                     SyncFragment(kind: .change, uuid: root, className: "Deck", properties: ["score": 2])],
                                         atomic: true, id: nil)
        #expect(try ClusterEntry(decoding: ClusterEntry.batch([one, two]).encoded) == .batch([one, two]))
        // A batch of one is written as the change set itself (what a server before batches reads).
        #expect(ClusterEntry.batch([one]).encoded == one.encoded)
        #expect(try ClusterEntry(decoding: ClusterEntry.batch([one]).encoded) == one)
        // Hostile input: a batch member that is not a change set is a typed error.
        #expect(throws: NATSError.self) { try ClusterEntry(decoding: Array(#"{"batch":[{"root":1}]}"#.utf8)) }
    }

    /// With the default batch size, change sets share log messages; with a batch of at most one
    /// byte, each goes alone (the limit holds) and the sessions wait for the queue instead of
    /// growing it (back-pressure), and still every change set applies once.
    @Test(arguments: [256 * 1024, 1])
    func concurrentChangeSetsOfOneServerShareLogMessagesAndEachAppliesOnce(maxBatchBytes: Int) async throws {
        let nats = try await NATSServerProcess.start()
        func makeServer() throws -> ContrailServer {
            try clusterServer(nats) { _, cluster in cluster.maxBatchBytes = maxBatchBytes }
        }
        func replica(_ server: ContrailServer) async throws -> (Client, Deck) {
            try await patientDeckReplica(server)
        }
        let writing = try makeServer()
        let reading = try makeServer()
        var writers: [(Client, Deck)] = []
        for _ in 0..<8 { writers.append(try await replica(writing)) }
        let reader = try await replica(reading)
        let rounds = 25
        for round in 0..<rounds {
            for (index, writer) in writers.enumerated() { writer.1.cards.append(Slide(text: "w\(index)-\(round)")) }
            await ChangeDelivery.main.drain()
        }
        let expected = Set(writers.indices.flatMap { index in (0..<rounds).map { "w\(index)-\($0)" } })
        let settled = await eventually(.seconds(60)) {
            writers.allSatisfy { ($0.0.session?.pendingChangeSets ?? 1) == 0 } && reader.1.cards.count == expected.count
        }
        #expect(settled, "reader has \(reader.1.cards.count) of \(expected.count)")
        // Each change set exactly once, every writer acknowledged.
        #expect(reader.1.cards.map(\.text).sorted() == expected.sorted())
        let connection = try await NATSConnection.connect(nats.url)
        let messages = try await JetStream(connection: connection).streamInfo("CONTRAIL_SCOPES").state.messages
        await connection.close()
        if maxBatchBytes == 1 {
            #expect(messages == UInt64(expected.count + 1), "one log message per change set, and the genesis")
        } else {
            // The genesis plus fewer messages than change sets: those waiting for a publish went out together.
            #expect(messages < UInt64(expected.count), "\(messages) log messages for \(expected.count) change sets")
        }
        for writer in writers { await writer.0.close() }
        await reader.0.close()
        await writing.stop(); await reading.stop(); await nats.stop()
    }
}
