import Contrail
import Foundation
import Synchronization
import Testing

/// Crash recovery against a real `contrail serve` child process: SIGKILL while writers are
/// mid-write (no `stop()`, so nothing is compacted), restart on the same data directory, and
/// check that replaying the change-set records (and cutting a torn tail) gives every
/// acknowledged change set.
@Suite("Server crash recovery", .serialized)
struct ServerCrashRecoveryTests {
    /// What one writer got through before the kill.
    struct WriterProgress: Sendable {
        var sent = 0
        var acknowledged = 0
    }

    /// Writers 0..<count each change the root (`r<round>w<i>` = n) and add an object that the root
    /// references (`r<round>last<i>`), one change set at a time, until the connection dies. Kills
    /// the server at a random moment after `acksBeforeKill` change sets are acknowledged in all.
    private func writeUntilKilled(_ server: ServerProcess, round: Int, writers count: Int, acksBeforeKill: Int) async throws -> [WriterProgress] {
        let (acks, ackSink) = AsyncStream<Void>.makeStream()
        let padding = JSON.string(String(repeating: "x", count: 2048))
        var clients: [(ServerTestClient, String)] = []
        for _ in 0..<count {
            let client = try await ServerTestClient.connect(port: server.port)
            try await client.createSession()
            let (_, state) = try await client.fetch("S", index: 1)
            clients.append((client, try #require(state["rootUUID"]?.stringValue)))
        }
        return try await withThrowingTaskGroup(of: (Int, WriterProgress).self) { group in
            for (i, (client, root)) in clients.enumerated() {
                group.addTask {
                    var progress = WriterProgress()
                    while true {
                        let n = progress.sent + 1
                        let item = Wire.uuid()
                        progress.sent = n
                        do {
                            let reply = try await client.sync(index: n + 1, fragments: [
                                Wire.fragment("change", root, "Root", ["r\(round)w\(i)": .int(Int64(n)), "r\(round)last\(i)": .string(item)]),
                                Wire.fragment("add", item, "Item", ["n": .int(Int64(n)), "pad": padding]),
                            ])
                            #expect(reply["fragmentReplies"] == [[:], [:]], "writer \(i) change set \(n): \(reply)")
                        } catch {
                            return (i, progress)  // the server is gone
                        }
                        progress.acknowledged = n
                        ackSink.yield()
                    }
                }
            }
            // A random moment among the writes in flight: after a random number of further
            // acknowledgements (the other writers' change sets are on their way then).
            let killAfter = acksBeforeKill + Int.random(in: 0..<(2 * count))
            var seen = 0
            for await _ in acks {
                seen += 1
                if seen == killAfter { break }
            }
            try await server.kill()
            var results = [WriterProgress](repeating: WriterProgress(), count: count)
            for try await (i, progress) in group { results[i] = progress }
            return results
        }
    }

    /// The root's properties and every object, from a fresh fetch of "S".
    private func fetchState(_ server: ServerProcess) async throws -> (root: [String: JSON], objects: [String: [String: JSON]]) {
        let client = try await ServerTestClient.connect(port: server.port)
        try await client.createSession()
        let (reply, state) = try await client.fetch("S", index: 1)
        #expect(reply["error"] == nil, "fetch after restart: \(reply)")
        let rootUUID = try #require(state["rootUUID"]?.stringValue)
        var objects: [String: [String: JSON]] = [:]
        for fragment in state["fragments"]?.arrayValue ?? [] {
            guard let uuid = fragment["uuid"]?.stringValue else { continue }
            objects[uuid] = fragment["properties"]?.objectValue ?? [:]
        }
        await client.transport.close(code: 1000, reason: "")
        return (objects[rootUUID] ?? [:], objects)
    }

    /// Every acknowledged change set of every round is in the state, and nothing that was never sent.
    private func expectAcknowledged(_ rounds: [[WriterProgress]], in state: (root: [String: JSON], objects: [String: [String: JSON]])) {
        for (round, writers) in rounds.enumerated() {
            for (i, progress) in writers.enumerated() {
                #expect(progress.acknowledged > 0, "round \(round) writer \(i) got no acknowledgement before the kill")
                let value = state.root["r\(round)w\(i)"]?.int64Value.map(Int.init) ?? 0
                #expect(value >= progress.acknowledged && value <= progress.sent,
                        "round \(round) writer \(i): restored \(value), acknowledged \(progress.acknowledged), sent \(progress.sent)")
                guard value > 0 else { continue }
                let item = state.root["r\(round)last\(i)"]?.stringValue
                let restored = item.flatMap { state.objects[$0] }
                #expect(restored?["n"]?.int64Value.map(Int.init) == value, "round \(round) writer \(i): the referenced item is missing or stale")
            }
        }
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-crash-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Durable acknowledgements (the default) and the buffered opt-in both keep every acknowledged
    /// change set across a crash of the server process (the buffered policy would not across a power loss).
    @Test(arguments: [[], ["--fsync", "interval:200ms"]])
    func sigkillMidWriteKeepsEveryAcknowledgedChangeSet(arguments: [String]) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var rounds: [[WriterProgress]] = []
        for round in 0..<3 {
            let server = try await ServerProcess(data: directory, arguments: arguments)
            if round > 0 { expectAcknowledged(rounds, in: try await fetchState(server)) }
            rounds.append(try await writeUntilKilled(server, round: round, writers: 4, acksBeforeKill: 40 + 20 * round))
        }
        let server = try await ServerProcess(data: directory)
        expectAcknowledged(rounds, in: try await fetchState(server))
        try await server.kill()
    }

    /// A sync writes nothing to the log itself (its marker goes out in front of the next record),
    /// so after a SIGKILL right after the last acknowledgement no marker follows the last record:
    /// the synced-length side file (`NAME.synced`) is what says it was synced. Damaged, that record
    /// is damage (refused), not a torn tail (cut). Control: without the side file, the same damage
    /// reads as a torn tail.
    @Test func theLastAcknowledgedRecordIsKnownSyncedAfterASigkill() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await ServerProcess(data: directory)
        let client = try await ServerTestClient.connect(port: server.port)
        try await client.createSession()
        let (_, state) = try await client.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        for n in 1...5 {
            let reply = try await client.sync(index: n + 1, fragments: [Wire.fragment("change", root, "Root", ["n": .int(Int64(n))])])
            #expect(reply["fragmentReplies"] == [[:]], "change set \(n): \(reply)")
        }
        try await server.kill()

        let logs = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter { $0.pathExtension == "scope" }
        let logURL = try #require(logs.first, "no scope log in \(directory)")
        let sidePath = logURL.path(percentEncoded: false) + ".synced"
        #expect(FileManager.default.fileExists(atPath: sidePath))
        var last: (offset: Int, payload: String)?
        _ = try LogFile.forEachRecord(at: logURL) { kind, offset, payload in
            if kind == .changeSet { last = (offset, String(decoding: payload, as: UTF8.self)) }
        }
        let (offset, payload) = try #require(last)
        #expect(payload.contains(#""n":5"#), "the last record is the last acknowledged change set: \(payload)")
        // One bit of the record's last payload byte flips (a bad block).
        let handle = try FileHandle(forUpdating: logURL)
        let position = UInt64(offset + 13 + payload.utf8.count - 1)
        try handle.seek(toOffset: position)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: position)
        try handle.write(contentsOf: [byte ^ 0x01])
        try handle.close()

        do {
            let recovery = try LogFile.read(at: logURL)
            Issue.record("a synced record's damage was read as \(recovery.truncatedTail.map { "a torn tail: \($0)" } ?? "intact")")
        } catch {
            guard case .corruptRecord = error else { throw error }
        }
        try FileManager.default.removeItem(atPath: sidePath)
        let unprotected = try LogFile.read(at: logURL)
        #expect(unprotected.truncatedTail?.offset == offset, "without the side file it is a torn tail")
    }

    @Test func tornTailIsCutAndAcknowledgedStateRemains() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await ServerProcess(data: directory)
        let rounds = [try await writeUntilKilled(first, round: 0, writers: 2, acksBeforeKill: 30)]
        // A power loss in the middle of the next record: half of it reached the disk.
        let logs = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "scope" }  // not the previous generation, the synced-length side file or a compaction temp file
        let logURL = try #require(logs.first, "no scope log in \(directory)")
        #expect(logs.count == 1)
        let intactSize = try #require(try FileManager.default.attributesOfItem(atPath: logURL.path(percentEncoded: false))[.size] as? Int)
        let (log, _) = try LogFile.open(at: logURL, fsync: .never)
        try log.append(.changeSet, Array(#"{"fragments":[]}"#.utf8) + [UInt8](repeating: 0x20, count: 4096))
        try log.close()
        let handle = try FileHandle(forWritingTo: logURL)
        try handle.truncate(atOffset: UInt64(intactSize + 2000))
        try handle.close()

        let second = try await ServerProcess(data: directory)
        expectAcknowledged(rounds, in: try await fetchState(second))
        #expect(try await second.logs("cut a torn tail of 2000 bytes"), "\(second.log)")
        // The cut log takes new writes, and they survive the next crash too.
        let more = rounds + [try await writeUntilKilled(second, round: 1, writers: 2, acksBeforeKill: 10)]
        let third = try await ServerProcess(data: directory)
        expectAcknowledged(more, in: try await fetchState(third))
        try await third.kill()
    }
}
