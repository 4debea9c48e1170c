import Contrail
import ContrailNATS
@testable import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// A wake-up naming a message that is already trimmed from the log (behind a snapshot) is not
/// waited for: the replica restores the snapshot and stops reading for it at once.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterTrimmedWakeUpTests {
    @Test func aWakeUpForATrimmedMessageIsNotAwaitedAndAFutureOneIs() async throws {
        // The replica under test connects as a user that may not subscribe to the scopes' subjects:
        // it hears no wake-up, so it falls behind the trimmed log.
        let nats = try await NATSServerProcess.start(configuration: NATSServerProcess.fullAndBlindUsers)
        var cluster = ClusterOptions(servers: [nats.url])
        cluster.credentials = .userPassword(user: "full", password: "pw-full")
        cluster.snapshotEvery = 2
        var options = ServerOptions()
        options.log = nil
        options.cluster = cluster
        let server = try ContrailServer(options: options)
        let writer = try await deckReplica(server.connector())

        // The replica under test: loaded now, then it hears nothing while the log moves on.
        var quiet = cluster
        quiet.catchUpInterval = .seconds(3_600)
        quiet.credentials = .userPassword(user: "blind", password: "pw-blind")
        let clock = ElapsedClock(ContinuousClock())
        let scope = ClusterScope(name: "Deck", link: ClusterLink(options: quiet, log: ServerLog(sink: nil)),
                                 limits: ServerOptions().limits, clock: clock, log: ServerLog(sink: nil))
        #expect(await scope.stateJSON() != nil)

        // Enough change sets for two snapshots: the log is trimmed behind the first.
        var full = NATSOptions(servers: [nats.url])
        full.credentials = cluster.credentials
        let connection = try await NATSConnection.connect(full)
        let jetStream = JetStream(connection: connection)
        var round = 0
        let trimmed = await eventually(.seconds(60)) { @MainActor in
            round += 1
            writer.1.score = round
            guard let info = try? await jetStream.streamInfo(cluster.streamName) else { return false }
            return info.state.firstSeq > 20  // well past what the replica had applied when it loaded
        }
        #expect(trimmed)

        // A wake-up for a message stored after sequence 1 (long trimmed): restored, not awaited.
        await scope.notified(awaiting: "trimmed-\(UUID())", previous: 1)
        #expect(await scope.awaitedCount == 0)
        #expect(await scope.stateJSON() != nil)

        // Control: a wake-up for a message not stored yet (its publish expects a later sequence) is awaited.
        await scope.notified(awaiting: "future-\(UUID())", previous: 1_000_000)
        #expect(await scope.awaitedCount == 1)

        await scope.close()
        await writer.0.close()
        await connection.close()
        await server.stop()
        await nats.stop()
    }
}
