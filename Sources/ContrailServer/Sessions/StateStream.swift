import ContrailWire

/// A scope's full state on its way to one session in parts (`ScopeStateChunk`, Protocol §8.25):
/// the parts not yet numbered. Its ``SessionOutbox`` numbers the next part only while the
/// unacknowledged bytes leave room for it (``SessionOutbox/streamBudget``), so the resend buffer
/// holds a window of parts, never the whole state; the parts themselves are the scope's immutable
/// snapshot text, shared by every session that fetched the same state.
struct StateStream: Sendable {
    /// The session's handle for the scope.
    let scopeIndex: Int
    /// The server root's UUID, lower case.
    let rootUUID: String
    /// The objects in the whole state.
    let total: Int
    /// The parts still to be numbered, in order.
    private(set) var remaining: ArraySlice<ScopeStateChunk.Part>

    init(scopeIndex: Int, rootUUID: String, parts: [ScopeStateChunk.Part]) {
        self.scopeIndex = scopeIndex
        self.rootUUID = rootUUID
        self.total = parts.last.map { $0.offset + $0.count } ?? 0
        self.remaining = parts[...]
    }

    /// The next part as a message numbered `index`, without taking it.
    func next(index: Int) -> OutgoingMessage? {
        remaining.first.map { .scopeStateChunk(index: index, scopeIndex: scopeIndex, rootUUID: rootUUID, total: total, part: $0) }
    }

    /// Takes the next part (after ``next(index:)`` named it).
    mutating func advance() {
        remaining = remaining.dropFirst()
    }
}
