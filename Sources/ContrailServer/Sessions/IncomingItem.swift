import ContrailWire

/// One decoded element of a client frame.
enum IncomingItem: Sendable {
    case message(Message)
    /// A `ScopeSync` whose envelope is fine but some fragments are not (§8.7).
    case invalidSync(index: Int, reasons: [String?])

    var index: Int {
        switch self {
        case .message(let message): return message.index
        case .invalidSync(let index, _): return index
        }
    }
}
