/// One WebSocket frame, with its payload already unmasked.
public struct WebSocketFrame: Sendable, Equatable {
    /// Whether this is the final fragment of a message (always true for control frames).
    public var fin: Bool
    /// The frame's opcode.
    public var opcode: Opcode
    /// The application payload (unmasked).
    public var payload: [UInt8]

    /// Creates a frame.
    @inlinable
    public init(fin: Bool = true, opcode: Opcode, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }
}

extension WebSocketFrame: CustomStringConvertible {
    /// A short summary, e.g. `"WebSocketFrame(text, fin, 5 bytes)"`.
    public var description: String {
        "WebSocketFrame(\(opcode)\(fin ? ", fin" : ""), \(payload.count) bytes)"
    }
}
