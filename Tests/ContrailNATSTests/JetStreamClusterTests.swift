import Testing
import ContrailNATS

@Suite(.disabled(if: NATSServerProcess.skipped, NATSServerProcess.skipReason),
       .oneAtATime, .timeLimit(.minutes(5)))
struct JetStreamClusterTests {
    @Test func replicatedStreamSurvivesLosingANodeAndTheNodeCatchesUp() async throws {
        var nodes = try await NATSServerProcess.startCluster()
        var options = NATSOptions(servers: nodes.map(\.url))
        options.reconnectWait = .milliseconds(50)
        options.requestTimeout = .seconds(5)
        let connection = try await NATSConnection.connect(options)
        let js = JetStream(connection: connection)
        var config = StreamConfig(name: "SCOPES", subjects: ["scope.>"])
        config.numReplicas = 3
        let replicated = config
        let info = try await retryingThroughFailover(.seconds(60)) { () async throws(NATSError) in
            try await js.createStream(replicated)
        }
        #expect(info.config.numReplicas == 3)

        var expected: [[UInt8]] = []
        @Sendable func publish(_ index: Int) async throws {
            // Retries after a failover reuse the id, so a publish whose ack was lost is stored once.
            _ = try await retryingThroughFailover(.seconds(60)) { () async throws(NATSError) in
                try await js.publish("scope.a", payload: Array("\(index)".utf8), messageID: "m-\(index)")
            }
        }
        for index in 0..<5 { try await publish(index); expected.append(Array("\(index)".utf8)) }

        // Lose the node the client is connected to: the service goes on with two of three.
        await nodes[0].kill()
        for index in 5..<10 { try await publish(index); expected.append(Array("\(index)".utf8)) }

        // Bring it back, then lose another node: the quorum now needs the restarted node, so the
        // writes below succeed only if it rejoined, and the reads show it lost nothing.
        nodes[0] = try await nodes[0].restart()
        await nodes[1].kill()
        for index in 10..<15 { try await publish(index); expected.append(Array("\(index)".utf8)) }
        let stored = try await retryingThroughFailover(.seconds(60)) { () async throws(NATSError) in
            try await js.messages(stream: "SCOPES", subject: "scope.a", from: 1)
        }
        #expect(stored.map(\.payload) == expected)
        #expect(stored.map(\.sequence) == Array(1...15))
        await connection.close()
        for node in nodes { await node.stop() }
    }
}
