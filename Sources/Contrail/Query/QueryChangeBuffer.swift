/// What one consumer of `LiveQuery.changes()` has not read yet: at most one `QueryChanges`,
/// relative to the contents the consumer last saw. A second delivery before the consumer reads
/// merges into it (updates in place into updates; anything else into `replacingAll`), so what the
/// consumer receives always leads from what it had to what the query holds when it reads.
@MainActor
final class QueryChangeBuffer {
    private var unread: QueryChanges?
    private var waiter: CheckedContinuation<Void, Never>?
    private var isFinished = false

    /// A delivery of the query.
    func push(_ changes: QueryChanges) {
        if let previous = unread {
            unread = Self.merge(previous, changes)
        } else {
            unread = changes
        }
        resume()
    }

    /// The query is gone: the sequence ends once what is unread is read.
    func finish() {
        isFinished = true
        resume()
    }

    private func resume() {
        let waiting = waiter
        waiter = nil
        waiting?.resume()
    }

    /// `first` followed by `second`, as one change.
    static func merge(_ first: QueryChanges, _ second: QueryChanges) -> QueryChanges {
        if !first.changesOrder, !second.changesOrder {
            var merged = first
            merged.updated.formUnion(second.updated)
            return merged
        }
        return .replacingAll(oldCount: first.oldCount, newCount: second.newCount)
    }

    /// The unread changes, waiting for a delivery when there are none; nil once the query is gone
    /// or the task is cancelled. The value is taken when the consumer runs, not when it is woken,
    /// so it matches the query's contents at that moment.
    func next() async -> QueryChanges? {
        while true {
            if let changes = unread {
                unread = nil
                return changes
            }
            if isFinished || Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    if isFinished || Task.isCancelled {
                        continuation.resume()
                    } else {
                        waiter = continuation
                    }
                }
            } onCancel: {
                Task { @MainActor in self.resume() }
            }
        }
    }
}
