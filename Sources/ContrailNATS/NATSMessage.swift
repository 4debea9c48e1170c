/// A message delivered to a subscription or received as a reply.
public struct NATSMessage: Sendable, Equatable {
    /// The subject it was published to.
    public var subject: String
    /// Where to send a reply, if the publisher asked for one.
    public var replyTo: String?
    /// The headers, if it was published with any (`HMSG`).
    public var headers: NATSHeaders?
    /// The payload bytes.
    public var payload: [UInt8]

    /// Creates a message.
    public init(subject: String, replyTo: String? = nil, headers: NATSHeaders? = nil, payload: [UInt8]) {
        self.subject = subject
        self.replyTo = replyTo
        self.headers = headers
        self.payload = payload
    }

    /// The status code of the headers (e.g. 503 "no responders"), if any.
    public var status: Int? { headers?.status }
}
