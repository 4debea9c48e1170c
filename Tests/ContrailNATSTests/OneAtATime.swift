import Testing

/// Runs the tests it marks one at a time (across suites), so the `nats-server` processes they
/// start do not all compete at once for this machine's cores with the rest of the test suite
/// (a dozen starting together stalled other suites' loopback connects for seconds).
struct OneAtATime: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Suites pass through; only the test cases themselves take the gate.
        guard testCase != nil else { return try await function() }
        await Self.gate.acquire()
        do {
            try await function()
        } catch {
            await Self.gate.release()
            throw error
        }
        await Self.gate.release()
    }

    private static let gate = Gate()

    /// An async mutex: waiters resume in arrival order.
    private actor Gate {
        private var held = false
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            if !held {
                held = true
                return
            }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            if waiters.isEmpty { held = false } else { waiters.removeFirst().resume() }
        }
    }
}

extension Trait where Self == OneAtATime {
    /// One marked test at a time, across suites.
    static var oneAtATime: OneAtATime { OneAtATime() }
}
