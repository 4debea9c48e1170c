/// A key-value bucket on JetStream (the layout of NATS KV: stream `KV_<bucket>` over `$KV.<bucket>.>`,
/// one subject per key keeping its last `history` values). Contrail stores scope snapshots in one.
public struct KeyValueBucket: Sendable {
    /// A value and its revision (the stream sequence that stored it).
    public struct Entry: Sendable, Equatable {
        /// The key.
        public var key: String
        /// The value bytes.
        public var value: [UInt8]
        /// The revision: pass it to `update` to write only over this value.
        public var revision: UInt64

        /// Creates an entry.
        public init(key: String, value: [UInt8], revision: UInt64) {
            self.key = key
            self.value = value
            self.revision = revision
        }
    }

    /// The bucket's name.
    public let name: String
    private let jetStream: JetStream
    private var stream: String { "KV_\(name)" }

    private static let operationHeader = "KV-Operation"

    /// Opens the bucket, creating its stream if needed.
    /// - Parameters:
    ///   - history: values kept per key (1...64).
    ///   - replicas: copies in a cluster.
    /// - Throws: `invalidName`, or `.jetStream` if the stream exists with another configuration.
    public init(jetStream: JetStream, name: String, history: Int = 1, replicas: Int = 1) async throws(NATSError) {
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
            throw .invalidName("bucket '\(name)'")
        }
        guard (1...64).contains(history) else { throw .invalidName("bucket history \(history) (1...64)") }
        self.name = name
        self.jetStream = jetStream
        var config = StreamConfig(name: "KV_\(name)", subjects: ["$KV.\(name).>"])
        config.maxMsgsPerSubject = history
        config.numReplicas = replicas
        config.discard = "new"
        config.allowRollupHdrs = true
        config.denyDelete = true
        config.allowDirect = true
        _ = try await jetStream.createStream(config)
    }

    /// Stores `value` under `key`; returns its revision.
    public func put(_ key: String, _ value: [UInt8]) async throws(NATSError) -> UInt64 {
        try Self.validateKey(key)
        return try await jetStream.publish("$KV.\(name).\(key)", payload: value).seq
    }

    /// Stores `value` only if the key's current revision is `revision` (0: the key has no value yet).
    /// - Throws: `.jetStream` with `JetStreamAPIError.wrongLastSequence` if another write came first.
    public func update(_ key: String, _ value: [UInt8], revision: UInt64) async throws(NATSError) -> UInt64 {
        try Self.validateKey(key)
        return try await jetStream.publish("$KV.\(name).\(key)", payload: value, expectedLastSubjectSequence: revision).seq
    }

    /// The current value of `key`, or nil if it has none (or was deleted).
    public func get(_ key: String) async throws(NATSError) -> Entry? {
        try Self.validateKey(key)
        guard let message = try await jetStream.lastMessage(stream: stream, subject: "$KV.\(name).\(key)") else { return nil }
        if let operation = message.headers?[Self.operationHeader], operation == "DEL" || operation == "PURGE" { return nil }
        return Entry(key: key, value: message.payload, revision: message.sequence)
    }

    /// Marks `key` deleted (a tombstone; `get` returns nil).
    public func delete(_ key: String) async throws(NATSError) {
        try Self.validateKey(key)
        _ = try await jetStream.publish("$KV.\(name).\(key)", payload: [], headers: NATSHeaders([(Self.operationHeader, "DEL")]))
    }

    /// The current values of the keys matching `pattern` (NATS wildcards: `*` one token, `>` the
    /// rest), oldest write first; deleted keys are left out. O(matching keys) round trips.
    public func entries(matching pattern: String) async throws(NATSError) -> [Entry] {
        let prefix = "$KV.\(name)."
        var result: [Entry] = []
        var next: UInt64 = 1
        while let message = try await jetStream.nextMessage(stream: stream, subject: prefix + pattern, from: next) {
            next = message.sequence + 1
            if let operation = message.headers?[Self.operationHeader], operation == "DEL" || operation == "PURGE" { continue }
            guard message.subject.hasPrefix(prefix) else { continue }
            result.append(Entry(key: String(message.subject.dropFirst(prefix.count)), value: message.payload, revision: message.sequence))
        }
        return result
    }

    /// Removes `key` with every value it kept, leaving no tombstone (unlike ``delete(_:)``).
    public func purge(_ key: String) async throws(NATSError) {
        try Self.validateKey(key)
        _ = try await jetStream.purge(stream: stream, subject: "$KV.\(name).\(key)", before: .max)
    }

    /// Keys: letters, digits and `-/_=.`, not starting or ending with '.'.
    static func validateKey(_ key: String) throws(NATSError) {
        guard !key.isEmpty, !key.hasPrefix("."), !key.hasSuffix("."),
              key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-/_=.".contains($0)) }) else {
            throw .invalidName("key '\(key)'")
        }
    }
}
