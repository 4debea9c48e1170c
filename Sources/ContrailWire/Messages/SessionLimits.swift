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
    /// The longest presence value the server relays, in bytes of its JSON (Protocol §8.20).
    package var maxPresenceBytes: Int?
    /// The most presence updates per second the server relays per session and scope (§8.20).
    package var presenceUpdatesPerSecond: Int?

    package init(maxMessageBytes: Int? = nil, maxFragmentsPerMessage: Int? = nil, maxPresenceBytes: Int? = nil,
                 presenceUpdatesPerSecond: Int? = nil) {
        self.maxMessageBytes = maxMessageBytes
        self.maxFragmentsPerMessage = maxFragmentsPerMessage
        self.maxPresenceBytes = maxPresenceBytes
        self.presenceUpdatesPerSecond = presenceUpdatesPerSecond
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
        maxPresenceBytes = positive("maxPresenceBytes")
        presenceUpdatesPerSecond = positive("presenceUpdatesPerSecond")
        if maxMessageBytes == nil && maxFragmentsPerMessage == nil && maxPresenceBytes == nil
            && presenceUpdatesPerSecond == nil { return nil }
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [:]
        if let maxMessageBytes { members["maxMessageBytes"] = .int(Int64(maxMessageBytes)) }
        if let maxFragmentsPerMessage { members["maxFragmentsPerMessage"] = .int(Int64(maxFragmentsPerMessage)) }
        if let maxPresenceBytes { members["maxPresenceBytes"] = .int(Int64(maxPresenceBytes)) }
        if let presenceUpdatesPerSecond { members["presenceUpdatesPerSecond"] = .int(Int64(presenceUpdatesPerSecond)) }
        return .object(members)
    }
}
