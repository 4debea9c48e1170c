import ContrailWebSocket

/// A server's log lines (set `ServerOptions.log` to ``sink``), for a test to wait until one appears.
final class ServerLogLines: Sendable {
    private struct State {
        var lines: [String] = []
        var nextID = 0
        var waiters: [(id: Int, text: String, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    private let state = SanitizerVisibleMutex(State())

    /// Every line logged so far.
    var all: [String] { state.withLock { $0.lines } }

    /// The log sink that records into this.
    var sink: @Sendable (String) -> Void { { [self] line in append(line) } }

    private func append(_ line: String) {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.lines.append(line)
            let woken = state.waiters.filter { line.contains($0.text) }.map(\.continuation)
            state.waiters.removeAll { line.contains($0.text) }
            return woken
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// Whether a line containing `text` has been logged, waiting for one if not yet. A bounded
    /// wait: false after `timeout` of real time.
    func contain(_ text: String, timeout: Duration = .seconds(30)) async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let logged = self.state.withLock { state -> Bool in
                        if state.lines.contains(where: { $0.contains(text) }) { return true }
                        state.waiters.append((id, text, continuation))
                        return false
                    }
                    if logged { continuation.resume(returning: true) }
                }
            }
            group.addTask {
                try? await ContinuousClock().sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first {
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index).continuation
                }
                waiter?.resume(returning: false)
            }
            group.cancelAll()
            await group.waitForAll()
            return first
        }
    }
}
