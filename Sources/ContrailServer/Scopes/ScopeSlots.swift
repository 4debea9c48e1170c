import ContrailWebSocket

/// Counts the scopes a server holds loaded (state in memory, log file open) against
/// ``ServerOptions/maxOpenScopes``. A scope takes a slot before loading and gives it back when it
/// unloads (idle) or closes.
final class ScopeSlots: Sendable {
    /// The most scopes loaded at once.
    let limit: Int
    private let used = SanitizerVisibleMutex(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot; false when all are taken.
    func take() -> Bool {
        used.withLock { used in
            guard used < limit else { return false }
            used += 1
            return true
        }
    }

    /// Gives a slot back.
    func give() {
        used.withLock { used in
            assert(used > 0, "a scope slot was given back twice")
            used = max(0, used - 1)
        }
    }

    /// The slots taken.
    var count: Int { used.withLock { $0 } }
}
