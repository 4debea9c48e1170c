import ContrailTestSupport
import Testing

/// The virtual clock the timing tests run on: it must wake exactly the sleepers whose deadline
/// has come, in order, and never one early.
@Suite("TestClock")
struct TestClockTests {
    @Test("advance wakes the due sleepers in deadline order and no others")
    func advanceWakesDueSleepers() async throws {
        let clock = TestClock()
        let woken = Woken()
        let start = clock.now
        let tasks = [3, 1, 2].map { seconds in
            Task {
                try await clock.sleep(until: start.advanced(by: .seconds(seconds)), tolerance: nil)
                await woken.append(seconds)
            }
        }
        #expect(await clock.waitForSleepers(3))
        clock.advance(by: .milliseconds(1999))
        try await tasks[1].value                 // 1 s: due
        #expect(await woken.values == [1])
        #expect(clock.sleeperCount == 2)         // 2 s and 3 s: not yet
        clock.advance(by: .seconds(2))
        try await tasks[2].value
        try await tasks[0].value
        #expect(await woken.values.sorted() == [1, 2, 3])
        #expect(clock.now == start.advanced(by: .milliseconds(3999)))
    }

    @Test("a deadline already passed returns at once; cancellation throws and unregisters")
    func pastDeadlineAndCancellation() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)), tolerance: nil)
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        #expect(await clock.waitForSleepers(1))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("waitForSleepers gives up after its bound when nobody sleeps")
    func waitForSleepersIsBounded() async {
        let clock = TestClock()
        #expect(await clock.waitForSleepers(1, timeout: .milliseconds(50)) == false)
    }
}

private actor Woken {
    var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}
