/// A WebSocket frame opcode (RFC 6455 §5.2).
///
/// Opcodes 3–7 and 11–15 are reserved; `Opcode(rawValue:)` returns nil for them.
public enum Opcode: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Continues a fragmented text or binary message.
    case continuation = 0
    /// First (or only) frame of a UTF-8 text message.
    case text = 1
    /// First (or only) frame of a binary message.
    case binary = 2
    /// Close control frame.
    case close = 8
    /// Ping control frame.
    case ping = 9
    /// Pong control frame.
    case pong = 10

    /// Whether this is a control opcode (close, ping, pong): at most 125 bytes of payload and never fragmented.
    @inlinable
    public var isControl: Bool { rawValue & 0x8 != 0 }

    /// A readable name, e.g. `"text"`.
    public var description: String {
        switch self {
        case .continuation: "continuation"
        case .text: "text"
        case .binary: "binary"
        case .close: "close"
        case .ping: "ping"
        case .pong: "pong"
        }
    }
}
