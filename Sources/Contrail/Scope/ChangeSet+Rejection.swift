extension ChangeSet {
    /// Why a change set was refused whole or in part (`ChangeSet.rejection`): the app reads it when
    /// `state` is `.reverted` or `.partiallyReverted`.
    public enum Rejection: Sendable, Equatable, CustomStringConvertible {
        /// Its `ScopeSync` would be `bytes` long (at least), over the `limit` the server
        /// advertised: the client refused it before sending (the server would close the connection).
        case messageTooLarge(bytes: Int, limit: Int)
        /// It has `count` fragments, over the `limit` per message the server advertised: the client
        /// refused it before sending.
        case tooManyFragments(count: Int, limit: Int)
        /// The server refused fragments with this error (the first refused fragment's).
        case refusedByServer(WireErrorBody)
        /// An original Jetstream server would reject it for `reason` (an array with a `null` hole
        /// among other values, Protocol §3) by dropping the whole frame without a reply, so the
        /// client refused it before sending.
        case unsupportedByJetstream(reason: String)
        /// The server's answer did not fit the change set (not a `ScopeSyncReply`, or not one entry
        /// per fragment), so nothing of it counts.
        case invalidReply

        /// A one-line account for logs.
        public var description: String {
            switch self {
            case .messageTooLarge(let bytes, let limit): "message of \(bytes) bytes is over the server's limit of \(limit) bytes"
            case .tooManyFragments(let count, let limit): "\(count) fragments are over the server's limit of \(limit) per message"
            case .refusedByServer(let error): "refused by the server: \(error.message)"
            case .unsupportedByJetstream(let reason): "a Jetstream server would refuse it: \(reason)"
            case .invalidReply: "the server's reply does not fit the change set"
            }
        }
    }
}
