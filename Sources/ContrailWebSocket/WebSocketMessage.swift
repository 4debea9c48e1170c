/// A complete WebSocket data message.
public enum WebSocketMessage: Sendable, Equatable {
    /// A UTF-8 text message.
    case text(String)
    /// A binary message.
    case binary([UInt8])

    /// The payload size in bytes.
    public var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}
