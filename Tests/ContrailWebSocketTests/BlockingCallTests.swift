@testable import ContrailSupport
import Foundation
import Testing

@Suite("Blocking calls and named threads")
struct BlockingCallTests {
    /// The name the system holds for the calling thread (what `ps -L` and `perf` show).
    private static func systemThreadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test("an event loop's thread carries its name in the system, cut to Linux's 15 bytes")
    func eventLoopThreadsAreNamed() async throws {
        let loop = try EventLoop(name: "named-loop-with-a-long-name")
        let name = await withCheckedContinuation { continuation in
            do { try loop.enqueue { continuation.resume(returning: Self.systemThreadName()) } } catch { continuation.resume(returning: "") }
        }
        await loop.stop()
        #expect(name == "named-loop-with")
        // Control: the test's own thread is not so named.
        #expect(Self.systemThreadName() != "named-loop-with")
    }

    @Test("a blocking call runs on a thread of its own, not on a Dispatch or cooperative-pool thread")
    func runsOnAThreadOfItsOwn() async {
        let name = await BlockingCall.run("contrail-test") { Self.systemThreadName() }
        #expect(name == "contrail-test")
        // Control: a Dispatch global queue's thread (the cooperative pool's, on Linux) is not named so.
        let dispatched = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Self.systemThreadName()) }
        }
        #expect(dispatched != "contrail-test")
    }

    @Test("blocking calls run at once, side by side: two that wait for each other both finish")
    func blockingCallsRunSideBySide() async {
        let first = DispatchSemaphore(value: 0)
        let second = DispatchSemaphore(value: 0)
        // Each signals the other and waits (bounded) for the other's signal: only calls that run at
        // the same time both see it.
        async let a = BlockingCall.run("contrail-test-a") { second.signal(); return first.wait(timeout: .now() + 30) == .success }
        async let b = BlockingCall.run("contrail-test-b") { first.signal(); return second.wait(timeout: .now() + 30) == .success }
        let (sawB, sawA) = await (a, b)
        #expect(sawB && sawA)
    }
}
