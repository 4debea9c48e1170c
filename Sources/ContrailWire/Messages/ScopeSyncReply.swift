/// `ScopeSyncReply` (server → client, sequenced): one entry per fragment of the answered
/// `ScopeSync`, in the same order (Protocol §2.7).
///
/// ```json
/// {"type":"ScopeSyncReply","index":5,"replyTo":3,"fragmentReplies":[{}, {"error":{"message":"ModelObject not found"}}]}
/// ```
package struct ScopeSyncReply: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "ScopeSyncReply"

    /// The server's sequence number.
    package var index: Int
    /// The `index` of the `ScopeSync` this answers.
    package var replyTo: Int
    /// One entry per request fragment, in order.
    package var fragmentReplies: [FragmentReply]
    /// Contrail extension (Protocol §8.11): the change set was applied before (its id is
    /// remembered), so this answer carries the scope's current values, not what its merge made.
    /// Absent (false) from an original server.
    package var repeated: Bool

    /// Creates the message.
    package init(index: Int, replyTo: Int, fragmentReplies: [FragmentReply], repeated: Bool = false) {
        self.index = index
        self.replyTo = replyTo
        self.fragmentReplies = fragmentReplies
        self.repeated = repeated
    }

    /// Decodes and validates ("Invalid replyTo", "Invalid fragmentReplies").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        replyTo = try fields.unsigned("replyTo", "Invalid replyTo")
        guard case .array(let elements)? = fields.members["fragmentReplies"] else {
            throw fields.failure("Invalid fragmentReplies")
        }
        var replies: [FragmentReply] = []
        replies.reserveCapacity(elements.count)
        for (position, element) in elements.enumerated() {
            guard let reply = FragmentReply(json: element) else {
                throw fields.failure("Invalid fragmentReplies entry \(position)")
            }
            replies.append(reply)
        }
        fragmentReplies = replies
        repeated = fields.members["repeated"] == .bool(true)
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "replyTo": .int(Int64(replyTo)),
            "fragmentReplies": .array(fragmentReplies.map(\.json)),
        ]
        if repeated { members["repeated"] = .bool(true) }
        return .object(members)
    }
}
