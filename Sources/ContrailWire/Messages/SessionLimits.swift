/// The limits a Contrail server advertises in its accepting `SessionCreateReply` (Protocol §8.19),
/// so that a client refuses a change set the server would not take before sending it, instead of
/// sending it again and again. An original client ignores the field; an original server never sends
/// it, and a client then checks nothing locally.
///
/// ```json
/// "limits": {"maxMessageBytes": 16777216, "maxFragmentsPerMessage": 10000}
/// ```
package struct SessionLimits: Sendable, Equatable {
    /// The longest frame the server reads, in bytes of UTF-8.
    package var maxMessageBytes: Int?
    /// The most fragments one `ScopeSync` may carry.
    package var maxFragmentsPerMessage: Int?

    package init(maxMessageBytes: Int? = nil, maxFragmentsPerMessage: Int? = nil) {
        self.maxMessageBytes = maxMessageBytes
        self.maxFragmentsPerMessage = maxFragmentsPerMessage
    }

    /// Reads the `limits` object; a member that is not a positive integer is left out (the server's
    /// bytes are hostile: a bad advertisement only means no local check), and nil when none is left.
    package init?(json: JSON?) {
        guard case .object(let members)? = json else { return nil }
        func positive(_ key: String) -> Int? {
            guard case .int(let value)? = members[key], value > 0, value <= Int64(Int.max) else { return nil }
            return Int(value)
        }
        maxMessageBytes = positive("maxMessageBytes")
        maxFragmentsPerMessage = positive("maxFragmentsPerMessage")
        if maxMessageBytes == nil && maxFragmentsPerMessage == nil { return nil }
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [:]
        if let maxMessageBytes { members["maxMessageBytes"] = .int(Int64(maxMessageBytes)) }
        if let maxFragmentsPerMessage { members["maxFragmentsPerMessage"] = .int(Int64(maxFragmentsPerMessage)) }
        return .object(members)
    }
}
