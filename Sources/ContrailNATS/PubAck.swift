/// JetStream's acknowledgement of a publish: the message is stored (on the stream's replicas).
public struct PubAck: Sendable, Decodable, Equatable {
    /// The stream that stored it.
    public var stream: String
    /// Its sequence in the stream.
    public var seq: UInt64
    /// True when its `Nats-Msg-Id` was seen within the duplicate window: nothing new was stored and
    /// `seq` is the original message's sequence.
    public var duplicate: Bool

    enum CodingKeys: String, CodingKey { case stream, seq, duplicate }

    /// Decodes an ack (`duplicate` is omitted when false).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        stream = try c.decode(String.self, forKey: .stream)
        seq = try c.decode(UInt64.self, forKey: .seq)
        duplicate = try c.decodeIfPresent(Bool.self, forKey: .duplicate) ?? false
    }
}
