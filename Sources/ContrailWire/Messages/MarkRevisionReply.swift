/// `MarkRevisionReply` (server → client, sequenced): a Contrail extension answering
/// ``MarkRevision`` (Protocol §8.26). Without `error`, `seq` is the sequence number of the last
/// change set the revision includes. With `error` nothing was marked (a label in use, one that is
/// not a label, a scope the session may not write).
///
/// ```json
/// [{"type":"MarkRevisionReply","index":9,"replyTo":5,"seq":42}]
/// [{"type":"MarkRevisionReply","index":10,"replyTo":6,"error":{"message":"a revision named 'v1' exists already","type":"revision-exists"}}]
/// ```
public struct MarkRevisionReply: Sendable, Equatable {
    /// The wire `type`.
    public static let typeName = "MarkRevisionReply"

    /// The server's sequence number.
    public var index: Int
    /// The `index` of the `MarkRevision` this answers.
    public var replyTo: Int
    /// The sequence number the revision names; nil with an error.
    public var sequence: Int?
    /// Why nothing was marked; `nil` on success.
    public var error: WireErrorBody?

    /// Creates the message.
    public init(index: Int, replyTo: Int, sequence: Int? = nil, error: WireErrorBody? = nil) {
        self.index = index
        self.replyTo = replyTo
        self.sequence = sequence
        self.error = error
    }

    /// Decodes and validates ("Invalid replyTo", "Invalid seq", "Invalid error").
    public init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        replyTo = try fields.unsigned("replyTo", "Invalid replyTo")
        sequence = try fields.optionalUnsigned("seq", "Invalid seq")
        error = try fields.errorBody("error")
    }

    /// The wire object.
    public var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "replyTo": .int(Int64(replyTo)),
        ]
        if let sequence { members["seq"] = .int(Int64(sequence)) }
        if let error { members["error"] = error.json }
        return .object(members)
    }
}
