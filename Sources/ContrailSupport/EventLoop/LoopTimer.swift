/// A one-shot timer on an `EventLoop`; create and cancel it on the loop thread.
package final class LoopTimer {
    /// When it fires: the time since the loop started, by the loop's clock.
    let deadline: Duration
    /// Dropped on cancel, so a cancelled timer waiting in the heap does not keep its captures alive.
    var body: (() -> Void)?
    /// With an injected clock: the task that sleeps on it until `deadline` and wakes the loop.
    var sleeper: Task<Void, Never>?
    var isCancelled: Bool { body == nil }

    init(deadline: Duration, body: @escaping () -> Void) {
        self.deadline = deadline
        self.body = body
    }

    /// Stops the timer from firing (no effect once it fired).
    package func cancel() {
        body = nil
        sleeper?.cancel()
        sleeper = nil
    }
}

/// A binary min-heap of timers by deadline; cancelled timers are dropped when they surface.
struct TimerHeap {
    private var items: [LoopTimer] = []

    mutating func nextDeadline() -> Duration? {
        while let first = items.first, first.isCancelled { _ = popFirst() }
        return items.first?.deadline
    }

    mutating func push(_ timer: LoopTimer) {
        items.append(timer)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popDue(now: Duration) -> LoopTimer? {
        guard let first = items.first, first.isCancelled || first.deadline <= now else { return nil }
        return popFirst()
    }

    /// Cancels and drops every timer. O(n).
    mutating func cancelAll() {
        for timer in items { timer.cancel() }
        items = []
    }

    private mutating func popFirst() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count, items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
