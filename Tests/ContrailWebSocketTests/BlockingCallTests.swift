@testable import ContrailSupport
import Foundation
import Testing

@Suite("Blocking calls and named threads")
struct BlockingCallTests {
    /// The name the system holds for the calling thread (what `ps -L` and `perf` show).
    private static func systemThreadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test("event loops' threads carry their names in the system, cut to Linux's 15 bytes")
    func eventLoopThreadsAreNamed() async throws {
        // Several at once: a name set through Foundation reached the system only when the starting
        // thread had recorded the new one's handle in time (under ThreadSanitizer, often not).
        var loops: [EventLoop] = []
        for index in 0..<4 { loops.append(try EventLoop(name: "loop-\(index)-with-a-long-name")) }
        for (index, loop) in loops.enumerated() {
            let name = await withCheckedContinuation { continuation in
                do { try loop.enqueue { continuation.resume(returning: Self.systemThreadName()) } } catch { continuation.resume(returning: "") }
            }
            #expect(name == "loop-\(index)-with-a-l")
            await loop.stop()
        }
        // Control: the test's own thread is not so named.
        #expect(!Self.systemThreadName().hasPrefix("loop-"))
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
