import Testing
@testable import ContrailNATS

@Suite struct NATSParserTests {
    private func parseAll(_ chunks: [String], maxControlLine: Int = 4096) throws -> [NATSParser.Operation] {
        var parser = NATSParser(maxControlLine: maxControlLine)
        var operations: [NATSParser.Operation] = []
        for chunk in chunks {
            parser.append(Array(chunk.utf8))
            while let operation = try parser.next() { operations.append(operation) }
        }
        return operations
    }

    @Test func controlOperations() throws {
        let operations = try parseAll(["PING\r\nPONG\r\n+OK\r\n-ERR 'Unknown Protocol Operation'\r\nINFO {\"a\":1}\r\n"])
        #expect(operations == [.ping, .pong, .ok, .error("Unknown Protocol Operation"), .info(Array("{\"a\":1}".utf8))])
    }

    @Test func messageSplitAcrossChunks() throws {
        let operations = try parseAll(["MSG foo.bar 9 inbox.1 5\r\nhe", "llo\r", "\nMSG a 2 0\r\n\r\n"])
        #expect(operations == [
            .message(sid: 9, NATSMessage(subject: "foo.bar", replyTo: "inbox.1", payload: Array("hello".utf8))),
            .message(sid: 2, NATSMessage(subject: "a", payload: [])),
        ])
    }

    @Test func headerMessage() throws {
        let headers = "NATS/1.0\r\nNats-Msg-Id: x1\r\nA: b c\r\n\r\n"
        let body = "hi"
        let line = "HMSG s 3 \(headers.utf8.count) \(headers.utf8.count + body.utf8.count)\r\n"
        let operations = try parseAll([line + headers + body + "\r\n"])
        guard case .message(let sid, let message)? = operations.first else {
            Issue.record("no message: \(operations)")
            return
        }
        #expect(sid == 3)
        #expect(message.payload == Array("hi".utf8))
        #expect(message.headers?["nats-msg-id"] == "x1")
        #expect(message.headers?["A"] == "b c")
        #expect(message.status == nil)
    }

    @Test func statusHeader() throws {
        let headers = try NATSHeaders(parsing: Array("NATS/1.0 503\r\n\r\n".utf8))
        #expect(headers.status == 503)
        let timeout = try NATSHeaders(parsing: Array("NATS/1.0 408 Request Timeout\r\n\r\n".utf8))
        #expect(timeout.status == 408)
        #expect(timeout.statusDescription == "Request Timeout")
    }

    @Test func headersRoundTrip() throws {
        var headers = NATSHeaders([("Nats-Msg-Id", "abc")])
        headers.set(NATSHeaders.expectedLastSubjectSequence, "7")
        headers.set("nats-msg-id", "def")
        let parsed = try NATSHeaders(parsing: try headers.encoded())
        #expect(parsed == headers)
        #expect(parsed.fields.count == 2)
        #expect(parsed[NATSHeaders.messageID] == "def")
        #expect(throws: NATSError.self) { try NATSHeaders([("bad name", "x")]).encoded() }
        #expect(throws: NATSError.self) { try NATSHeaders([("Name", "line\r\nbreak")]).encoded() }
    }

    @Test func malformedInputIsATypedError() throws {
        #expect(throws: NATSError.self) { try parseAll(["BOGUS\r\n"]) }
        #expect(throws: NATSError.self) { try parseAll(["MSG foo notanumber 3\r\nabc\r\n"]) }
        #expect(throws: NATSError.self) { try parseAll(["MSG foo 1 3\r\nabcXY"]) }
        #expect(throws: NATSError.self) { try parseAll(["HMSG foo 1 9 3\r\n"]) }
        #expect(throws: NATSError.self) { try parseAll(["HMSG foo 1 3 3\r\nXYZ\r\n"]) }
        // A control line without an end is bounded; the same bytes under the limit just wait for more.
        #expect(throws: NATSError.self) { try parseAll([String(repeating: "M", count: 100)], maxControlLine: 64) }
        #expect(try parseAll([String(repeating: "M", count: 60)], maxControlLine: 64).isEmpty)
    }

    @Test func oversizedPayloadIsRefused() throws {
        var parser = NATSParser(maxPayload: 10)
        parser.append(Array("MSG a 1 11\r\n".utf8))
        #expect(throws: NATSError.self) { try parser.next() }
        var fits = NATSParser(maxPayload: 10)
        fits.append(Array("MSG a 1 10\r\n0123456789\r\n".utf8))
        #expect(try fits.next() != nil)
    }

    @Test func serverURLs() throws {
        #expect(try NATSServerURL(parsing: "nats://127.0.0.1:4222") == NATSServerURL(host: "127.0.0.1", port: 4222))
        #expect(try NATSServerURL(parsing: "localhost") == NATSServerURL(host: "localhost", port: 4222))
        #expect(try NATSServerURL(parsing: "nats://[::1]:5000") == NATSServerURL(host: "::1", port: 5000))
        #expect(try NATSServerURL.list("nats://a:1, nats://b:2").map(\.port) == [1, 2])
        #expect(throws: NATSError.self) { try NATSServerURL(parsing: "http://a:1") }
        #expect(throws: NATSError.self) { try NATSServerURL(parsing: "nats://a:0") }
        #expect(throws: NATSError.self) { try NATSServerURL(parsing: "nats://a:99999") }
        #expect(throws: NATSError.self) { try NATSServerURL(parsing: "nats://:4222") }
        #expect(throws: NATSError.self) { try NATSServerURL.list(" , ") }
    }

    @Test func subjectValidation() throws {
        #expect(throws: Never.self) { try NATSConnection.validateSubject("a.b.c", wildcards: false) }
        #expect(throws: Never.self) { try NATSConnection.validateSubject("a.*.>", wildcards: true) }
        #expect(throws: NATSError.self) { try NATSConnection.validateSubject("a.*", wildcards: false) }
        #expect(throws: NATSError.self) { try NATSConnection.validateSubject("a..b", wildcards: true) }
        #expect(throws: NATSError.self) { try NATSConnection.validateSubject("a b", wildcards: true) }
        #expect(throws: NATSError.self) { try NATSConnection.validateSubject("", wildcards: true) }
    }
}
