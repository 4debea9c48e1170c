import ContrailTestSupport
import Foundation
import Testing

/// The shared test helpers do what their documentation says: virtual time, bounded waits, child processes.
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

    @Test func childProcessOutputPortAndExit() async throws {
        let child = try ChildProcess(URL(filePath: "/bin/sh"), ["-c", "echo listening on 127.0.0.1:4242/; echo done >&2; exec sleep 60"])
        #expect(try await child.port(after: "127.0.0.1:", terminator: { $0 == "/" }) == 4242)
        #expect(await child.waitForOutput(containing: "done"))
        #expect(child.termination == nil && child.isRunning)
        await child.kill()
        #expect(child.termination == .signalled(SIGKILL))
        #expect(await child.waitForOutputToEnd())
        // A child that exits on its own.
        let quick = try ChildProcess(URL(filePath: "/bin/sh"), ["-c", "exit 3"])
        #expect(await quick.waitForExit())
        #expect(quick.termination == .exited(3))
        #expect(await quick.waitForOutput(containing: "never printed") == false, "the output ended without it")
    }
}
