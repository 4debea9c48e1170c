/// An error returned by the JetStream API: an HTTP-like `code` and a JetStream `errorCode`.
public struct JetStreamAPIError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The HTTP-like status (400, 404, 503, ...).
    public var code: Int
    /// The JetStream error code (`err_code`), e.g. `wrongLastSequence`.
    public var errorCode: Int
    /// The server's explanation.
    public var errorDescription: String

    /// `Nats-Expected-Last-Subject-Sequence` (or another expected-sequence header) did not match.
    public static let wrongLastSequence = 10071
    /// No stream with that name.
    public static let streamNotFound = 10059
    /// A stream with that name already exists with a different configuration.
    public static let streamNameInUse = 10058
    /// The requested message does not exist.
    public static let noMessageFound = 10037
    /// Not enough cluster peers for the replicas asked for (e.g. a cluster still forming).
    public static let noSuitablePeers = 10005
    /// JetStream is temporarily unavailable (e.g. a cluster without a leader yet).
    public static let temporarilyUnavailable = 10008

    /// Creates an error from its parts.
    public init(code: Int, errorCode: Int, errorDescription: String) {
        self.code = code
        self.errorCode = errorCode
        self.errorDescription = errorDescription
    }

    enum CodingKeys: String, CodingKey {
        case code
        case errorCode = "err_code"
        case errorDescription = "description"
    }

    /// A sentence a person can act on.
    public var description: String { "JetStream error \(errorCode) (\(code)): \(errorDescription)" }
}
