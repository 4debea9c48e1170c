import ContrailTestSupport
import Testing

/// The shared test helpers do what their documentation says: virtual time and bounded waits.
/// (`ChildProcess` is exercised by the server, NATS and crash tests; a spawn here, early in the run,
/// made the log-file tests' close-and-reopen flaky: a child being spawned holds the parent's open
/// descriptions, and so their `flock`, until it execs.)
@Suite struct TestSupportTests {
    @Test func sleepersWakeOnlyWhenVirtualTimeReachesThem() async throws {
        let clock = TestClock()
        let short = Task { try await clock.sleep(for: .milliseconds(20)) }
        let long = Task { try await clock.sleep(for: .seconds(10)) }
        #expect(await clock.waitForSleepers(2))
        #expect(clock.sleeperCount(dueWithin: .milliseconds(20)) == 1)
        #expect(clock.sleeperCount(dueWithin: .seconds(10)) == 2)
        clock.advance(by: .milliseconds(20))
        try await short.value
        #expect(clock.sleeperCount == 1, "the long sleeper still sleeps")
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func waitingForASleeperDueSoonIgnoresLaterOnes() async throws {
        let clock = TestClock()
        let keepAlive = Task { try await clock.sleep(for: .seconds(10)) }
        #expect(await clock.waitForSleepers(1))
        // Bounded negative: nothing is due within 20 ms, so the wait gives up.
        #expect(await clock.waitForSleepers(1, dueWithin: .milliseconds(20), timeout: .milliseconds(50)) == false)
        let backoff = Task { try await clock.sleep(for: .milliseconds(5)) }
        #expect(await clock.waitForSleepers(1, dueWithin: .milliseconds(20)))
        clock.advance(by: .milliseconds(20))
        try await backoff.value
        keepAlive.cancel()
    }

    @MainActor
    @Test func eventuallyIsABoundedWait() async {
        var checks = 0
        #expect(await eventually { checks += 1; return checks == 3 })
        #expect(await eventually(.milliseconds(20)) { false } == false)
    }

    @Test func withTimeoutCancelsABodyThatTakesTooLong() async throws {
        #expect(try await withTimeout(.seconds(30)) { 7 } == 7)
        await #expect(throws: TestFailure.self) {
            try await withTimeout(.milliseconds(20)) { try await Task.sleep(for: .seconds(60)) }
        }
    }
}
