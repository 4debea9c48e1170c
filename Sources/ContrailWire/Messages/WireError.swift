/// Why a frame, message or sync fragment could not be decoded.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The frame is not valid JSON.
    case malformedJSON(JSONError)
    /// The JSON is not a valid message: `type` names the message type when it is known, `reason`
    /// uses the original server's wording where it has one ("Invalid index", "Requires valid version").
    case invalidMessage(type: String?, reason: String)
    /// The message's `type` is not one Jetstream defines.
    case unknownMessageType(String)
    /// A sync fragment is invalid. `index` is its position in the message's `fragments`, if any.
    case invalidFragment(index: Int?, reason: String)
    /// A `ScopeSync` whose envelope is valid but some of whose fragments are not. `reasons` has one
    /// entry per fragment (`nil` where the fragment was fine), so a server can answer each (§8.7).
    case invalidScopeSyncFragments(index: Int, scopeIndex: Int, reasons: [String?])
    /// An element of a batch (an array frame) is invalid; `position` is its 0-based position.
    indirect case batchElement(position: Int, error: WireError)

    /// A sentence a person can act on, e.g. `invalid Ping: Invalid ack`.
    public var description: String {
        switch self {
        case .malformedJSON(let error):
            return "frame is not valid JSON: \(error)"
        case .invalidMessage(let type, let reason):
            return "invalid \(type ?? "message"): \(reason)"
        case .unknownMessageType(let type):
            return "unrecognized message type '\(type)'"
        case .invalidFragment(let index, let reason):
            return index.map { "invalid sync fragment \($0): \(reason)" } ?? "invalid sync fragment: \(reason)"
        case .invalidScopeSyncFragments(let index, _, let reasons):
            let details = reasons.enumerated().compactMap { position, reason in reason.map { "fragment \(position): \($0)" } }
            return "ScopeSync \(index) has invalid fragments: " + details.joined(separator: "; ")
        case .batchElement(let position, let error):
            return "batch element \(position): \(error)"
        }
    }

    /// The message the original Jetstream server uses for this failure, e.g. in a 4096 close
    /// reason: "Could not parse message input, input was not JSON", "Unrecognized message type",
    /// or the validation message.
    public var jetstreamMessage: String {
        switch self {
        case .malformedJSON: return "Could not parse message input, input was not JSON"
        case .unknownMessageType: return "Unrecognized message type"
        case .invalidMessage(_, let reason): return reason
        case .invalidFragment(_, let reason): return reason
        case .invalidScopeSyncFragments(_, _, let reasons): return reasons.lazy.compactMap { $0 }.first ?? "Invalid fragments"
        case .batchElement(_, let error): return error.jetstreamMessage
        }
    }

    /// The innermost error, unwrapping `batchElement`.
    public var underlying: WireError {
        if case .batchElement(_, let error) = self { return error.underlying }
        return self
    }
}
