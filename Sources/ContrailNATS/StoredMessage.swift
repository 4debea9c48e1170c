import Foundation

/// A message read back from a stream (`STREAM.MSG.GET`).
public struct StoredMessage: Sendable, Equatable {
    /// The subject it was published to.
    public var subject: String
    /// Its sequence in the stream.
    public var sequence: UInt64
    /// Its headers, if it had any.
    public var headers: NATSHeaders?
    /// Its payload.
    public var payload: [UInt8]

    /// Creates a stored message.
    public init(subject: String, sequence: UInt64, headers: NATSHeaders?, payload: [UInt8]) {
        self.subject = subject
        self.sequence = sequence
        self.headers = headers
        self.payload = payload
    }

    /// The API's form: headers and data in base64.
    struct Wire: Decodable {
        var subject: String
        var seq: UInt64
        var hdrs: String?
        var data: String?

        func decoded() throws(NATSError) -> StoredMessage {
            var headers: NATSHeaders?
            if let hdrs, !hdrs.isEmpty {
                guard let bytes = Data(base64Encoded: hdrs) else { throw .invalidResponse("stored headers are not base64") }
                headers = try NATSHeaders(parsing: Array(bytes))
            }
            var payload: [UInt8] = []
            if let data, !data.isEmpty {
                guard let bytes = Data(base64Encoded: data) else { throw .invalidResponse("stored data is not base64") }
                payload = Array(bytes)
            }
            return StoredMessage(subject: subject, sequence: seq, headers: headers, payload: payload)
        }
    }
}
