import Contrail
import ContrailNATS
@testable import ContrailServer
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// Mixed-version clusters: a server that reads only log format 1 (one change set per message, what
/// servers before group commit wrote; `logFormat = 1` simulates one) keeps every server on format 1
/// while it is live; a message of a format a server does not read stops the scope there with a
/// log line, never skipped.
@MainActor
@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason), .oneAtATime, .timeLimit(.minutes(5)))
struct ClusterLogFormatTests {
    func makeServer(_ nats: NATSServerProcess, logFormat: Int = 2, lines: LogLines? = nil) throws -> ContrailServer {
        try clusterServer(nats) { options, cluster in
            if let lines { options.log = { line in lines.append(line) } }
            cluster.logFormat = logFormat
            cluster.formatRefresh = .milliseconds(200)
        }
    }

    func replica(_ server: ContrailServer) async throws -> (Client, Deck) {
        try await patientDeckReplica(server)
    }

    /// The log messages of scope "Deck" after the genesis: (format header, payload starts a batch).
    func deckMessages(_ nats: NATSServerProcess) async throws -> [(String?, Bool)] {
        let connection = try await NATSConnection.connect(nats.url)
        let subject = ClusterOptions(servers: []).subjectPrefix + "." + ClusterEntry.token(for: "Deck")
        let messages = try await JetStream(connection: connection).messages(stream: "CONTRAIL_SCOPES", subject: subject, from: 1)
        await connection.close()
        return messages.map { ($0.headers?[ClusterLogFormat.header], $0.payload.starts(with: Array(#"{"batch":"#.utf8))) }
    }

    /// Eight sessions of one server append a card each, `rounds` times, all at once.
    func burst(_ writers: [(Client, Deck)], rounds: Int, tag: String) async {
        for round in 0..<rounds {
            for (index, writer) in writers.enumerated() { writer.1.cards.append(Slide(text: "\(tag)\(index)-\(round)")) }
            await ChangeDelivery.main.drain()
        }
    }

    @Test func whileAFormatOneServerIsLiveNoBatchIsWrittenAndAfterItStopsBatchesAre() async throws {
        let nats = try await NATSServerProcess.start()
        // The format-1 server is live first, so the format-2 one registers seeing it and never batches.
        let old = try makeServer(nats, logFormat: 1)
        let reader = try await replica(old)
        let writing = try makeServer(nats)
        var writers: [(Client, Deck)] = []
        for _ in 0..<8 { writers.append(try await replica(writing)) }
        #expect(await writing.core.cluster?.writeFormat == 1)
        await burst(writers, rounds: 10, tag: "a")
        #expect(await eventually(.seconds(60)) { reader.1.cards.count == 80 }, "the old server read \(reader.1.cards.count) of 80")
        let whileOld = try await deckMessages(nats)
        #expect(whileOld.allSatisfy { $0.0 == nil && !$0.1 }, "no batch while a format-1 server is live")
        await reader.0.close()
        await old.stop()  // leaves the record

        // Control: with only format-2 servers left, concurrent change sets share messages again.
        #expect(await eventually(.seconds(60)) { await writing.core.cluster?.writeFormat == 2 })
        var round = 0
        let batched = await eventually(.seconds(60)) {
            round += 1
            await burst(writers, rounds: 1, tag: "b\(round)-")
            return (try? await deckMessages(nats).contains { $0.0 == "2" && $0.1 }) == true
        }
        #expect(batched)
        for writer in writers { await writer.0.close() }
        await writing.stop(); await nats.stop()
    }

    @Test func aMessageOfAFormatAServerDoesNotReadStopsTheScopeThereWithALogLine() async throws {
        let nats = try await NATSServerProcess.start()
        let writing = try makeServer(nats)
        let writer = try await replica(writing)
        writer.1.title = "before"
        #expect(await eventually(.seconds(30)) { (writer.0.session?.pendingChangeSets ?? 1) == 0 })
        await writer.0.close()
        await writing.stop()

        // A batch as a format-2 server writes it (empty: it changes nothing), appended to the log.
        let connection = try await NATSConnection.connect(nats.url)
        let subject = ClusterOptions(servers: []).subjectPrefix + "." + ClusterEntry.token(for: "Deck")
        _ = try await JetStream(connection: connection).publish(subject, payload: Array(#"{"batch":[]}"#.utf8),
                                                                headers: NATSHeaders([(ClusterLogFormat.header, "2")]))

        // A format-1 server: the scope does not load, and the log says why.
        let lines = LogLines()
        let old = try makeServer(nats, logFormat: 1, lines: lines)
        await #expect(throws: (any Error).self) { _ = try await replica(old) }
        let logged = lines.all.joined(separator: "\n")
        #expect(logged.contains("stopped on this server") && logged.contains("log format 2"), "\(logged)")
        await old.stop()

        // Positive control: a format-2 server reads the same log.
        let current = try makeServer(nats)
        let fresh = try await replica(current)
        #expect(fresh.1.title == "before")
        await fresh.0.close()
        await current.stop()

        // And a format no server knows stops even the newest one.
        _ = try await JetStream(connection: connection).publish(subject, payload: Array(#"{"batch":[]}"#.utf8),
                                                                headers: NATSHeaders([(ClusterLogFormat.header, "3")]))
        let futureLines = LogLines()
        let newest = try makeServer(nats, lines: futureLines)
        await #expect(throws: (any Error).self) { _ = try await replica(newest) }
        #expect(futureLines.all.contains { $0.contains("log format 3") })
        await newest.stop()
        await connection.close()
        await nats.stop()
    }

    /// A loaded scope that meets a message of a format its server does not read ends the sessions
    /// subscribed to it there (their clients start over, and learn why from the fetch), instead of
    /// leaving them on a replica that no longer follows the log.
    @Test func aLoadedScopeThatMeetsAnUnreadableFormatEndsItsSessions() async throws {
        let nats = try await NATSServerProcess.start()
        let lines = LogLines()
        let server = try makeServer(nats, lines: lines)
        let writer = try await replica(server)
        var statuses: [Client.Status] = []
        let token = writer.0.onStatusChange(writer.0) { statuses.append($0) }
        writer.1.title = "before"
        #expect(await eventually(.seconds(30)) { (writer.0.session?.pendingChangeSets ?? 1) == 0 })
        // Positive control: a session that the scope can keep current stays online.
        #expect(statuses.isEmpty, "\(statuses)")

        let connection = try await NATSConnection.connect(nats.url)
        let subject = ClusterOptions(servers: []).subjectPrefix + "." + ClusterEntry.token(for: "Deck")
        _ = try await JetStream(connection: connection).publish(subject, payload: Array(#"{"batch":[]}"#.utf8),
                                                                headers: NATSHeaders([(ClusterLogFormat.header, "3")]))
        #expect(await eventually(.seconds(30)) { lines.all.contains { $0.contains("stopped on this server") } }, "\(lines.all)")
        #expect(await eventually(.seconds(30)) { statuses.contains(.connecting) }, "the session ended: \(statuses)")
        // The client's next fetch there is refused with a reason.
        await #expect(throws: (any Error).self) { _ = try await replica(server) }
        token.cancel()
        await writer.0.close()
        await server.stop()
        await connection.close()
        await nats.stop()
    }

    @Test func theFormatRecordDropsExpiredServersAndWritesTheLowestLiveFormat() async throws {
        let nats = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(nats.url)
        let bucket = try await KeyValueBucket(jetStream: JetStream(connection: connection), name: "formats_test")
        let now = Date()
        #expect(try await ClusterLogFormat.register(server: "new", reads: 2, lifetime: .seconds(60), now: now, in: bucket).write == 2)
        #expect(try await ClusterLogFormat.register(server: "old", reads: 1, lifetime: .seconds(60), now: now, in: bucket)
            == ClusterLogFormat.Agreement(write: 1, newerLive: true))
        #expect(try await ClusterLogFormat.register(server: "new", reads: 2, lifetime: .seconds(60), now: now, in: bucket).write == 1)
        // "old" stopped refreshing: 61 s later it has expired.
        #expect(try await ClusterLogFormat.register(server: "new", reads: 2, lifetime: .seconds(60), now: now + 61, in: bucket).write == 2)
        // A graceful stop leaves at once.
        #expect(try await ClusterLogFormat.register(server: "old", reads: 1, lifetime: .seconds(60), now: now + 62, in: bucket).write == 1)
        await ClusterLogFormat.deregister(server: "old", in: bucket)
        #expect(try await ClusterLogFormat.register(server: "new", reads: 2, lifetime: .seconds(60), now: now + 63, in: bucket).write == 2)
        await connection.close()
        await nats.stop()
    }
}
