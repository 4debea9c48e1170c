@testable import ContrailServer
import ContrailSupport
import Foundation
import Synchronization
import Testing

/// A burst's deliveries wait for the connection's event loop to go idle (``DeliveryBatch``): frames
/// that arrived meanwhile join the burst, and nothing waits longer than the loop's idleness or the
/// batch's frame bound.
@Suite("Delivery batches ended on an event loop") struct DeliveryBatchTests {
    /// Runs `body` on `loop`'s thread and waits for it.
    private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) async throws {
        try await loop.submit { body() }
    }

    @Test func withoutALoopABurstEndsAtOnce() {
        let batch = DeliveryBatch()
        let woken = Atomic<Int>(0)
        batch.runHere { #expect(DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } == true) }
        batch.endBurst(frames: 1, loop: nil)
        #expect(woken.load(ordering: .relaxed) == 1)
        #expect(batch.heldCount == 0)
    }

    @Test func offTheLoopsThreadABurstEndsAtOnce() async throws {
        let loop = try EventLoop(name: "test")
        let batch = DeliveryBatch()
        let woken = Atomic<Int>(0)
        batch.runHere { _ = DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } }
        batch.endBurst(frames: 1, loop: loop)  // the test's thread, not the loop's
        #expect(woken.load(ordering: .relaxed) == 1)
        await loop.stop()
    }

    @Test func onTheLoopTheWakesWaitForTheLoopToGoIdle() async throws {
        let loop = try EventLoop(name: "test")
        let batch = DeliveryBatch()
        let order = SanitizerVisibleMutex<[String]>([])
        let idle = SanitizerVisibleMutex<CheckedContinuation<Void, Never>?>(nil)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            idle.withLock { $0 = done }
            try? loop.execute {
                batch.runHere { _ = DeliveryBatch.current?.hold { order.withLock { $0.append("wake") } } }
                batch.endBurst(frames: 1, loop: loop)
                // Still held: the loop is busy with what this burst queued (a next frame, say).
                order.withLock { $0.append("burst ended, held \(batch.heldCount)") }
                try? loop.execute { order.withLock { $0.append("queued work") } }
                // Registered after the batch's flush: runs after it, at the same idle moment.
                loop.whenIdle { idle.withLock { $0 }?.resume() }
            }
        }
        #expect(order.withLock { $0 } == ["burst ended, held 1", "queued work", "wake"])
        #expect(batch.heldCount == 0)
        await loop.stop()
    }

    @Test func aBurstThatReachesTheFrameBoundEndsAtOnceEvenOnTheLoop() async throws {
        let loop = try EventLoop(name: "test")
        let batch = DeliveryBatch()
        let woken = Atomic<Int>(0)
        try await onLoop(loop) {
            batch.runHere { _ = DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } }
            batch.endBurst(frames: DeliveryBatch.maxFrames - 1, loop: loop)
            #expect(woken.load(ordering: .relaxed) == 0)
            // The next burst's frames reach the bound: everything goes now.
            batch.runHere { _ = DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } }
            batch.endBurst(frames: 1, loop: loop)
            #expect(woken.load(ordering: .relaxed) == 2)
        }
        await loop.stop()
    }

    @Test func anIdleMomentDuringABurstDoesNotEndIt() async throws {
        let loop = try EventLoop(name: "test")
        let batch = DeliveryBatch()
        let woken = Atomic<Int>(0)
        let heldAtIdle = SanitizerVisibleMutex<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            try? loop.execute {
                batch.runHere { _ = DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } }
                batch.endBurst(frames: 1, loop: loop)
                // A next burst starts before the loop goes idle and is still being handled then
                // (waiting for something, say): its idle moment must not end it.
                batch.runHere { _ = DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } }
                loop.whenIdle {
                    heldAtIdle.withLock { $0.append(batch.heldCount) }
                    // The burst ends: its wakes and the first burst's wait for the next idle moment.
                    batch.endBurst(frames: 1, loop: loop)
                    heldAtIdle.withLock { $0.append(batch.heldCount) }
                    loop.whenIdle { done.resume() }
                }
            }
        }
        #expect(heldAtIdle.withLock { $0 } == [2, 2])
        #expect(woken.load(ordering: .relaxed) == 2)
        #expect(batch.heldCount == 0)
        await loop.stop()
    }
}
