/// `Ping` (both directions, index 0): the only acknowledgement, and the resend trigger
/// (Protocol §1.6, §2.8).
///
/// ```json
/// {"type":"Ping","index":0,"ack":6,"resendMissing":false}
/// ```
package struct Ping: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "Ping"

    /// Always 0.
    package var index: Int
    /// The last index received from the other side.
    package var ack: Int
    /// Asks the other side to resend everything after `ack`. Only a literal `true` counts on input;
    /// always sent.
    package var resendMissing: Bool

    /// Creates the message.
    package init(index: Int = 0, ack: Int, resendMissing: Bool = false) {
        self.index = index
        self.ack = ack
        self.resendMissing = resendMissing
    }

    /// Decodes and validates ("Invalid ack").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        ack = try fields.unsigned("ack", "Invalid ack")
        resendMissing = fields.members["resendMissing"] == .bool(true)
    }

    /// The wire object (`resendMissing` always present).
    package var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "ack": .int(Int64(ack)), "resendMissing": .bool(resendMissing)]
    }
}
