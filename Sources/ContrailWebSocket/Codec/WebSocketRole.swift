/// Which end of a WebSocket connection we are.
///
/// The role decides masking (RFC 6455 §5.3): a client masks every frame it sends and
/// must receive unmasked frames; a server is the other way round.
public enum WebSocketRole: Sendable, Hashable {
    /// The end that opened the connection; sends masked frames.
    case client
    /// The end that accepted the connection; sends unmasked frames.
    case server

    /// Whether frames sent by this role carry a masking key.
    @inlinable
    public var masksOutgoingFrames: Bool { self == .client }

    /// Whether frames received by this role must carry a masking key.
    @inlinable
    public var expectsMaskedFrames: Bool { self == .server }
}
