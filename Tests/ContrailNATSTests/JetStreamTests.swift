import Testing
import ContrailTestSupport
import ContrailNATS

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason),
       .oneAtATime, .timeLimit(.minutes(5)))
struct JetStreamTests {
    private func scopeStream(_ js: JetStream) async throws -> StreamInfo {
        try await js.createStream(StreamConfig(name: "SCOPES", subjects: ["scope.>"]))
    }

    /// Runs `body` against a fresh server with the stream SCOPES over `scope.>`.
    private func withJetStream(_ body: (JetStream) async throws -> Void) async throws {
        let server = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(server.url)
        let js = JetStream(connection: connection)
        _ = try await scopeStream(js)
        try await body(js)
        await connection.close()
        await server.stop()
    }

    @Test func createInfoUpdateAndPublishWithAck() async throws {
        let server = try await NATSServerProcess.start()
        let connection = try await NATSConnection.connect(server.url)
        let js = JetStream(connection: connection)
        let created = try await scopeStream(js)
        #expect(created.config.name == "SCOPES")
        #expect(created.state.messages == 0)
        // Creating the identical stream again is fine; another configuration under the same name is not.
        _ = try await scopeStream(js)
        var other = StreamConfig(name: "SCOPES", subjects: ["elsewhere.>"])
        other.storage = "memory"
        await #expect { _ = try await js.createStream(other) } throws: { error in
            (error as? NATSError)?.jetStreamErrorCode == JetStreamAPIError.streamNameInUse
        }

        var sequences: [UInt64] = []
        for index in 0..<3 {
            let ack = try await js.publish("scope.a", payload: Array("m\(index)".utf8))
            #expect(ack.stream == "SCOPES")
            #expect(!ack.duplicate)
            sequences.append(ack.seq)
        }
        #expect(sequences == [1, 2, 3])
        let info = try await js.streamInfo("SCOPES")
        #expect(info.state.messages == 3)
        #expect(info.state.lastSeq == 3)

        var updated = info.config
        updated.maxMsgsPerSubject = 2
        let after = try await js.updateStream(updated)
        #expect(after.config.maxMsgsPerSubject == 2)
        #expect(try await js.streamInfo("SCOPES").config.maxMsgsPerSubject == 2)
        // The storage type cannot change: the server refuses, a typed error.
        var invalid = updated
        invalid.storage = "memory"
        await #expect { _ = try await js.updateStream(invalid) } throws: { error in
            (error as? NATSError)?.jetStreamErrorCode != nil
        }
        await #expect { _ = try await js.streamInfo("MISSING") } throws: { error in
            (error as? NATSError)?.jetStreamErrorCode == JetStreamAPIError.streamNotFound
        }
        // No stream captures the subject: no responders, a typed error.
        await #expect(throws: NATSError.noResponders(subject: "nowhere")) {
            _ = try await js.publish("nowhere", payload: [])
        }
        await connection.close()
        await server.stop()
    }

    @Test func deduplicatesByMessageID() async throws {
        try await withJetStream { js in
            let first = try await js.publish("scope.a", payload: Array("one".utf8), messageID: "cs-1")
            let again = try await js.publish("scope.a", payload: Array("one".utf8), messageID: "cs-1")
            let other = try await js.publish("scope.a", payload: Array("two".utf8), messageID: "cs-2")
            #expect(!first.duplicate)
            #expect(again.duplicate)
            #expect(again.seq == first.seq)
            #expect(!other.duplicate)
            #expect(other.seq == first.seq + 1)
            #expect(try await js.streamInfo("SCOPES").state.messages == 2)
        }
    }

    @Test func expectedLastSubjectSequenceRefusesAStaleWriter() async throws {
        try await withJetStream { js in
            // Another subject's messages do not count: the expectation is per subject.
            _ = try await js.publish("scope.b", payload: [1])
            let first = try await js.publish("scope.a", payload: [2], expectedLastSubjectSequence: 0)
            #expect(first.seq == 2)
            await #expect { _ = try await js.publish("scope.a", payload: [3], expectedLastSubjectSequence: 0) } throws: { error in
                (error as? NATSError)?.jetStreamErrorCode == JetStreamAPIError.wrongLastSequence
            }
            let second = try await js.publish("scope.a", payload: [4], expectedLastSubjectSequence: first.seq)
            #expect(second.seq == 3)
            let messages = try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1)
            #expect(messages.map(\.payload) == [[2], [4]])
        }
    }

    @Test func replaysASubjectInOrderAndPurgesBehindASequence() async throws {
        try await withJetStream { js in
            var aSequences: [UInt64] = []
            for index in 0..<10 {
                let subject = index % 3 == 0 ? "scope.b" : "scope.a"
                var headers = NATSHeaders()
                headers.set("Contrail-Index", String(index))
                let ack = try await js.publish(subject, payload: Array("\(index)".utf8), headers: headers)
                if subject == "scope.a" { aSequences.append(ack.seq) }
            }
            let all = try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1)
            #expect(all.map(\.sequence) == aSequences)
            #expect(all.map { String(decoding: $0.payload, as: UTF8.self) } == ["1", "2", "4", "5", "7", "8"])
            #expect(all.allSatisfy { $0.subject == "scope.a" })
            #expect(all.map { $0.headers?["Contrail-Index"] } == ["1", "2", "4", "5", "7", "8"])
            let tail = try await js.messages(stream: "SCOPES", subject: "scope.a", from: aSequences[3])
            #expect(tail.map(\.sequence) == Array(aSequences[3...]))
            let limited = try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1, limit: 2)
            #expect(limited.count == 2)

            let last = try await js.lastMessage(stream: "SCOPES", subject: "scope.a")
            #expect(last?.sequence == aSequences.last)
            #expect(try await js.message(stream: "SCOPES", sequence: 1)?.subject == "scope.b")
            #expect(try await js.message(stream: "SCOPES", sequence: 999) == nil)

            let purged = try await js.purge(stream: "SCOPES", subject: "scope.a", before: aSequences[4])
            #expect(purged == 4)
            let kept = try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1)
            #expect(kept.map(\.sequence) == Array(aSequences[4...]))
            // The other subject is untouched.
            #expect(try await js.messages(stream: "SCOPES", subject: "scope.b", from: 1).count == 4)
        }
    }

    @Test func keyValueBucketForSnapshots() async throws {
        try await withJetStream { js in
            let bucket = try await KeyValueBucket(jetStream: js, name: "snapshots")
            #expect(try await bucket.get("scope-1") == nil)
            let r1 = try await bucket.put("scope-1", Array("state@5".utf8))
            let r2 = try await bucket.put("scope-2", Array("other".utf8))
            #expect(try await bucket.get("scope-1") == .init(key: "scope-1", value: Array("state@5".utf8), revision: r1))
            // A write over a stale revision is refused; over the current one it succeeds.
            let r3 = try await bucket.update("scope-1", Array("state@9".utf8), revision: r1)
            await #expect { _ = try await bucket.update("scope-1", Array("lost".utf8), revision: r1) } throws: { error in
                (error as? NATSError)?.jetStreamErrorCode == JetStreamAPIError.wrongLastSequence
            }
            #expect(try await bucket.get("scope-1")?.value == Array("state@9".utf8))
            #expect(try await bucket.get("scope-1")?.revision == r3)
            #expect(try await bucket.get("scope-2")?.revision == r2)
            try await bucket.delete("scope-2")
            #expect(try await bucket.get("scope-2") == nil)
            await #expect(throws: NATSError.self) { _ = try await bucket.put("bad key", []) }
            // History 1: the old value of scope-1 is gone from the stream.
            #expect(try await js.streamInfo("KV_snapshots").state.messages == 2)
        }
    }

    @Test func jetStreamSurvivesAServerRestart() async throws {
        let first = try await NATSServerProcess.start()
        var options = NATSOptions(servers: [first.url])
        options.reconnectWait = .milliseconds(50)
        options.requestTimeout = .seconds(10)
        let connection = try await NATSConnection.connect(options)
        let js = JetStream(connection: connection)
        _ = try await scopeStream(js)
        let before = try await js.publish("scope.a", payload: [1], messageID: "x-1")
        await first.kill()
        let second = try await first.restart()
        // The publish waits for the reconnect; JetStream may need a moment to load its streams.
        let after = try await withTimeout(.seconds(30)) { () -> PubAck in
            while true {
                do throws(NATSError) {
                    return try await js.publish("scope.a", payload: [2], messageID: "x-2")
                } catch .disconnected, .noResponders, .timedOut {
                    continue
                } catch {
                    throw error
                }
            }
        }
        #expect(after.seq == before.seq + 1)
        // The stored id is still deduplicated after the restart.
        let resent = try await js.publish("scope.a", payload: [1], messageID: "x-1")
        #expect(resent.duplicate)
        #expect(try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1).map(\.payload) == [[1], [2]])
        await connection.close()
        await second.stop()
    }
}
