import Foundation

/// The JetStream API over a `NATSConnection`: streams, acknowledged publishes with deduplication
/// (`Nats-Msg-Id`) and optimistic concurrency (`Nats-Expected-Last-Subject-Sequence`), reading a
/// subject back in sequence order, and purging behind a sequence. Every call is one request/reply.
public struct JetStream: Sendable {
    /// The connection the API requests go over.
    public let connection: NATSConnection
    /// The API subject prefix.
    public var apiPrefix = "$JS.API"
    /// The deadline of each API call; nil uses the connection's `requestTimeout`.
    public var timeout: Duration?

    /// The JetStream API on `connection`.
    public init(connection: NATSConnection, timeout: Duration? = nil) {
        self.connection = connection
        self.timeout = timeout
    }

    // MARK: Streams

    /// Creates a stream (succeeds if an identical one exists).
    /// - Throws: `.jetStream` with `streamNameInUse` if one with another configuration exists.
    public func createStream(_ config: StreamConfig) async throws(NATSError) -> StreamInfo {
        try Self.validateStreamName(config.name)
        return try await call("STREAM.CREATE.\(config.name)", body: encode(config))
    }

    /// Replaces a stream's configuration (the whole configuration is sent).
    /// - Throws: `.jetStream` with `streamNotFound`, or when the change is not allowed.
    public func updateStream(_ config: StreamConfig) async throws(NATSError) -> StreamInfo {
        try Self.validateStreamName(config.name)
        return try await call("STREAM.UPDATE.\(config.name)", body: encode(config))
    }

    /// A stream's configuration and state.
    /// - Throws: `.jetStream` with `streamNotFound`.
    public func streamInfo(_ name: String) async throws(NATSError) -> StreamInfo {
        try Self.validateStreamName(name)
        return try await call("STREAM.INFO.\(name)", body: [])
    }

    /// Deletes a stream and its messages.
    public func deleteStream(_ name: String) async throws(NATSError) {
        try Self.validateStreamName(name)
        let _: Success = try await call("STREAM.DELETE.\(name)", body: [])
    }

    // MARK: Publishing

    /// Publishes to a subject captured by a stream and waits for the stream's acknowledgement.
    /// - Parameters:
    ///   - messageID: sets `Nats-Msg-Id`: a second publish with the same id inside the stream's duplicate
    ///     window stores nothing and acks with `duplicate == true`.
    ///   - expectedLastSubjectSequence: sets `Nats-Expected-Last-Subject-Sequence`: the publish is refused
    ///     with `JetStreamAPIError.wrongLastSequence` unless the subject's last message has this sequence
    ///     (0: the subject has no message).
    /// - Throws: `.jetStream` (e.g. code 10071), `noResponders` when no stream captures the subject, `timedOut`, `disconnected`.
    public func publish(_ subject: String, payload: [UInt8], headers: NATSHeaders? = nil, messageID: String? = nil,
                        expectedLastSubjectSequence: UInt64? = nil) async throws(NATSError) -> PubAck {
        var headers = headers ?? NATSHeaders()
        if let messageID { headers.set(NATSHeaders.messageID, messageID) }
        if let expectedLastSubjectSequence {
            headers.set(NATSHeaders.expectedLastSubjectSequence, String(expectedLastSubjectSequence))
        }
        let reply = try await connection.request(subject, payload: payload, headers: headers.fields.isEmpty ? nil : headers,
                                                 timeout: timeout)
        return try Self.decode(reply.payload)
    }

    // MARK: Reading

    /// The message with this sequence, or nil if there is none (never stored, deleted or purged).
    public func message(stream: String, sequence: UInt64) async throws(NATSError) -> StoredMessage? {
        try await get(stream: stream, GetRequest(seq: sequence))
    }

    /// The last message on `subject`, or nil if the subject has none.
    public func lastMessage(stream: String, subject: String) async throws(NATSError) -> StoredMessage? {
        try await get(stream: stream, GetRequest(lastBySubj: subject))
    }

    /// The first message on `subject` (wildcards allowed) with a sequence at or after `sequence`, or nil.
    public func nextMessage(stream: String, subject: String, from sequence: UInt64) async throws(NATSError) -> StoredMessage? {
        try await get(stream: stream, GetRequest(seq: max(sequence, 1), nextBySubj: subject))
    }

    /// Up to `limit` messages on `subject` from `sequence` on, in sequence order (one request per message).
    /// O(limit) round trips.
    public func messages(stream: String, subject: String, from sequence: UInt64, limit: Int = .max)
        async throws(NATSError) -> [StoredMessage]
    {
        var result: [StoredMessage] = []
        var next = sequence
        while result.count < limit, let message = try await nextMessage(stream: stream, subject: subject, from: next) {
            result.append(message)
            next = message.sequence + 1
        }
        return result
    }

    /// Removes the messages on `subject` with a sequence below `sequence` (those at or after it stay).
    /// Returns how many were removed.
    public func purge(stream: String, subject: String, before sequence: UInt64) async throws(NATSError) -> UInt64 {
        try Self.validateStreamName(stream)
        let response: PurgeResponse = try await call("STREAM.PURGE.\(stream)",
                                                     body: encode(PurgeRequest(filter: subject, seq: sequence)))
        return response.purged
    }

    // MARK: Plumbing

    private struct Success: Decodable {}
    private struct PurgeRequest: Encodable { var filter: String; var seq: UInt64 }
    private struct PurgeResponse: Decodable { var purged: UInt64 }
    private struct GetResponse: Decodable { var message: StoredMessage.Wire }
    private struct ErrorEnvelope: Decodable { var error: JetStreamAPIError? }
    private struct GetRequest: Encodable {
        var seq: UInt64?
        var lastBySubj: String?
        var nextBySubj: String?
        enum CodingKeys: String, CodingKey {
            case seq
            case lastBySubj = "last_by_subj"
            case nextBySubj = "next_by_subj"
        }
    }

    private func get(stream: String, _ request: GetRequest) async throws(NATSError) -> StoredMessage? {
        try Self.validateStreamName(stream)
        do throws(NATSError) {
            let response: GetResponse = try await call("STREAM.MSG.GET.\(stream)", body: encode(request))
            return try response.message.decoded()
        } catch .jetStream(let error) where error.errorCode == JetStreamAPIError.noMessageFound {
            return nil
        }
    }

    private func call<Response: Decodable>(_ api: String, body: [UInt8]) async throws(NATSError) -> Response {
        let reply = try await connection.request("\(apiPrefix).\(api)", payload: body, timeout: timeout)
        return try Self.decode(reply.payload)
    }

    private func encode(_ value: some Encodable) throws(NATSError) -> [UInt8] {
        do { return Array(try JSONEncoder().encode(value)) } catch { throw .invalidResponse("cannot encode request: \(error)") }
    }

    /// Decodes an API response, turning its `error` member into `NATSError.jetStream`.
    static func decode<Response: Decodable>(_ payload: [UInt8]) throws(NATSError) -> Response {
        let data = Data(payload)
        let decoder = JSONDecoder()
        if let envelope = try? decoder.decode(ErrorEnvelope.self, from: data), let error = envelope.error {
            throw .jetStream(error)
        }
        do { return try decoder.decode(Response.self, from: data) } catch {
            throw .invalidResponse("\(Response.self): \(error) in \(String(decoding: payload.prefix(200), as: UTF8.self))")
        }
    }

    /// Stream names may not be empty or hold whitespace, '.', '*', '>' or path separators.
    static func validateStreamName(_ name: String) throws(NATSError) {
        guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || ".*>/\\".contains($0) }) else {
            throw .invalidName("stream name '\(name)'")
        }
    }
}
