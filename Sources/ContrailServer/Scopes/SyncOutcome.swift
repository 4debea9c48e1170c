import ContrailWire

/// What applying one `ScopeSync` to a ``ScopeStore`` did.
struct SyncOutcome: Sendable {
    /// One entry per request fragment, in order.
    var replies: [FragmentReply]
    /// The accepted fragments as they took effect (references lowercased, collections merged,
    /// no `bases`), in message order: what is broadcast and logged.
    var accepted: [SyncFragment]
    /// What the sender gets before its reply, since it may not know them or their last state: the
    /// `add`s of deleted objects the change set brought back without a fragment of their own (the
    /// end of `accepted`), after those of objects its own `add` revived that hold shared texts
    /// (their states, which its reply cannot carry).
    var revived: [SyncFragment] = []
    /// The change set was applied before: the replies carry current values (see
    /// ``ScopeStore/answerDuplicate(_:)``).
    var repeated = false
}
