/// A subscription: the messages arrive in `messages` in the order the server sent them.
/// The buffer is bounded (`NATSOptions.subscriptionBufferLimit`); what does not fit is dropped and
/// counted by `NATSConnection.droppedMessageCount(for:)`.
public final class NATSSubscription: Sendable {
    /// The subscription id on the connection.
    public let sid: UInt64
    /// The subject (may hold `*` and `>` wildcards).
    public let subject: String
    /// The delivered messages; finishes when unsubscribed or the connection is closed.
    public let messages: AsyncStream<NATSMessage>
    private let connection: NATSConnection

    init(sid: UInt64, subject: String, messages: AsyncStream<NATSMessage>, connection: NATSConnection) {
        self.sid = sid
        self.subject = subject
        self.messages = messages
        self.connection = connection
    }

    /// Stops the subscription and finishes `messages`.
    public func unsubscribe() async {
        await connection.unsubscribe(sid: sid)
    }
}
