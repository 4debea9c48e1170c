/// What a decoded frame means to the connection: a complete message or a control frame.
///
/// Produced by `MessageAssembler.push(_:)`.
public enum WebSocketEvent: Sendable, Equatable {
    /// A complete text message (validated UTF-8).
    case text(String)
    /// A complete binary message.
    case binary([UInt8])
    /// A ping with its application data; answer with a pong carrying the same bytes.
    case ping([UInt8])
    /// A pong with its application data.
    case pong([UInt8])
    /// A close frame: its code (nil when the frame had no payload) and reason.
    case close(CloseCode?, String)
}
