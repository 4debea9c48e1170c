/// A WebSocket close status code (RFC 6455 §7.4).
///
/// Any `UInt16` can be represented; use `isValidOnWire` to know whether a peer may send it.
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric status code.
    public let rawValue: UInt16

    /// Wraps a numeric status code.
    @inlinable
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Wraps a numeric status code.
    @inlinable
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection has been fulfilled.
    public static let normal = CloseCode(1000)
    /// 1001: the endpoint is going away (server shutdown, page navigation).
    public static let goingAway = CloseCode(1001)
    /// 1002: the peer broke the protocol.
    public static let protocolError = CloseCode(1002)
    /// 1003: the endpoint received a type of data it cannot accept.
    public static let unsupportedData = CloseCode(1003)
    /// 1005: no status code was present in the close frame. Never sent on the wire.
    public static let noStatusReceived = CloseCode(1005)
    /// 1006: the connection dropped without a close frame. Never sent on the wire.
    public static let abnormalClosure = CloseCode(1006)
    /// 1007: a message's data was inconsistent with its type (e.g. invalid UTF-8 in text).
    public static let invalidFramePayloadData = CloseCode(1007)
    /// 1008: a message violated the endpoint's policy.
    public static let policyViolation = CloseCode(1008)
    /// 1009: a message was too big to process.
    public static let messageTooBig = CloseCode(1009)
    /// 1010: the client expected the server to negotiate an extension it did not.
    public static let mandatoryExtension = CloseCode(1010)
    /// 1011: the server hit an unexpected condition.
    public static let internalError = CloseCode(1011)

    /// Whether a peer may put this code in a close frame (RFC 6455 §7.4.1 and §7.4.2):
    /// 1000–1003, 1007–1011, the IANA-registered 1012–1014 (service restart, try again later, bad gateway)
    /// and 3000–4999. 1004, 1005, 1006, 1015 and everything else are invalid.
    @inlinable
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The number and, for registered codes, a name, e.g. `"1002 (protocol error)"`.
    public var description: String {
        let name: String? =
            switch rawValue {
            case 1000: "normal"
            case 1001: "going away"
            case 1002: "protocol error"
            case 1003: "unsupported data"
            case 1005: "no status received"
            case 1006: "abnormal closure"
            case 1007: "invalid frame payload data"
            case 1008: "policy violation"
            case 1009: "message too big"
            case 1010: "mandatory extension"
            case 1011: "internal error"
            case 1012: "service restart"
            case 1013: "try again later"
            case 1014: "bad gateway"
            case 1015: "TLS handshake"
            default: nil
            }
        if let name { return "\(rawValue) (\(name))" }
        return "\(rawValue)"
    }
}
