/// A stream's configuration and state, as `STREAM.INFO`, `CREATE` and `UPDATE` report them.
public struct StreamInfo: Sendable, Decodable, Equatable {
    /// The stream's message counters.
    public struct State: Sendable, Decodable, Equatable {
        /// Messages stored.
        public var messages: UInt64
        /// Bytes stored.
        public var bytes: UInt64
        /// The first stored sequence.
        public var firstSeq: UInt64
        /// The last sequence ever assigned.
        public var lastSeq: UInt64

        enum CodingKeys: String, CodingKey {
            case messages, bytes
            case firstSeq = "first_seq"
            case lastSeq = "last_seq"
        }
    }

    /// The configuration the server applied.
    public var config: StreamConfig
    /// The counters.
    public var state: State
}
