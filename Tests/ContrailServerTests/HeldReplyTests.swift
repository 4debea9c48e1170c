@testable import ContrailServer
import Contrail
import ContrailSupport
import ContrailTestSupport
import Foundation
import Synchronization
import Testing

/// Broadcasts do not wait for the disk: with a data directory, a change set is broadcast to the
/// other sessions as soon as it is applied, and only the sender's reply waits (held in its place in
/// the sender's outbox, with whatever follows it) for the record to be durable. And what one burst
/// of frames delivers goes out together (``DeliveryBatch``).
@Suite("Held replies and delivery batches") struct HeldReplyTests {
    private func sync(_ n: Int, index: Int, scopeIndex: Int, object: UUID) -> ScopeSync {
        ScopeSync(index: index, scopeIndex: scopeIndex,
                  fragments: [SyncFragment(kind: .change, uuid: object, className: "Canvas", properties: ["x": .int(Int64(n))])])
    }

    private func isReply(_ message: OutgoingMessage) -> Bool {
        message.syncReply != nil
    }

    private func isBroadcast(_ message: OutgoingMessage) -> Bool {
        if case .scopeSync = message { true } else { false }
    }

    @Test func aHeldReplyHoldsWhatFollowsItUntilReleased() {
        let outbox = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("ended") })
        _ = outbox.attach({}, resumed: false)
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[1]") }
        let hold = HeldReply()
        hold.place({ .scopeSync(index: $0, scopeIndex: 0, fragments: "[2]") }, in: outbox)
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[3]") }
        outbox.enqueuePing()
        #expect(outbox.takePending(generation: 1).map(\.index) == [1])
        #expect(outbox.takePending(generation: 1).isEmpty, "nothing after the held reply goes before it")
        hold.release()
        #expect(outbox.takePending(generation: 1).map(\.index) == [2, 3, 0])
        // Control: with nothing held, all goes at once.
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[4]") }
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[5]") }
        #expect(outbox.takePending(generation: 1).map(\.index) == [4, 5])
    }

    /// A held reply alone gives the writer nothing to take, so it does not wake it (no task that
    /// finds nothing); its release does. Control: a message that is not held wakes it.
    @Test func aHeldReplyAloneDoesNotWakeTheWriter() {
        let outbox = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("ended") })
        let wakes = Atomic<Int>(0)
        _ = outbox.attach({ wakes.add(1, ordering: .relaxed) }, resumed: false)
        let hold = HeldReply()
        hold.place({ .scopeSync(index: $0, scopeIndex: 0, fragments: "[1]") }, in: outbox)
        #expect(wakes.load(ordering: .relaxed) == 0)
        hold.release()
        #expect(wakes.load(ordering: .relaxed) == 1)
        #expect(outbox.takePending(generation: 1).map(\.index) == [1])
        outbox.enqueue { .scopeSync(index: $0, scopeIndex: 0, fragments: "[2]") }
        #expect(wakes.load(ordering: .relaxed) == 2)
    }

    @Test func aReplacementTakesTheHeldReplysPlaceAlsoForResend() {
        let outbox = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("ended") })
        _ = outbox.attach({}, resumed: false)
        let hold = HeldReply()
        hold.place({ .scopeSync(index: $0, scopeIndex: 0, fragments: "[\"accepted\"]") }, in: outbox)
        #expect(outbox.takePending(generation: 1).isEmpty)
        hold.release { .scopeSync(index: $0, scopeIndex: 0, fragments: "[\"failed\"]") }
        let sent = outbox.takePending(generation: 1)
        #expect(sent.map(\.index) == [1])
        if case .scopeSync(_, _, let text)? = sent.first { #expect(text == "[\"failed\"]") } else { Issue.record("not the replacement") }
        outbox.resend(after: 0)
        let resent = outbox.takePending(generation: 1)
        #expect(resent.count == 2)
        if case .scopeSync(_, _, let text)? = resent.last { #expect(text == "[\"failed\"]") } else { Issue.record("resend lost the replacement") }
    }

    @Test func aBatchHoldsWakesUntilFlushedAndNotAfter() async {
        let batch = DeliveryBatch()
        let woken = Atomic<Int>(0)
        await batch.run {
            #expect(DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } == true)
            #expect(DeliveryBatch.current?.hold { woken.add(1, ordering: .relaxed) } == true)
        }
        #expect(woken.load(ordering: .relaxed) == 0)
        #expect(batch.heldCount == 2)
        batch.flush()
        #expect(woken.load(ordering: .relaxed) == 2)
        // A task that inherited the batch and runs after the burst ended is not held back: its
        // caller wakes at once (the batch neither keeps nor runs the wake-up).
        #expect(batch.hold { woken.add(1, ordering: .relaxed) } == false)
        #expect(batch.heldCount == 0)
        #expect(woken.load(ordering: .relaxed) == 2)
    }

    /// A transport that records each frame, whether it was written on the log writer's thread
    /// without waiting (``OutboxWriter``'s inline path) or through `send` (a task), and what
    /// `probe` said when it was written.
    private final class RecordingTransport: SyncTransport {
        let frames = TypedAsyncStream<String, TransportClosed>(unfolding: { () async throws(TransportClosed) -> String? in nil })
        let sent = Mutex<[(frame: String, onWriterThread: Bool, probed: Int)]>([])
        private let writer: ScopeLogWriter
        private let probe: @Sendable () -> Int

        init(writer: ScopeLogWriter, probe: @escaping @Sendable () -> Int) {
            self.writer = writer
            self.probe = probe
        }

        func send(_ frame: String) async throws(TransportClosed) {
            let probed = probe()
            sent.withLock { $0.append((frame, false, probed)) }
        }

        func sendWithoutWaiting(_ frame: String) throws(TransportClosed) -> Bool {
            let onWriterThread = writer.isCurrentThread
            let probed = probe()
            sent.withLock { $0.append((frame, onWriterThread, probed)) }
            return true
        }

        func close(code: UInt16, reason: String) async {}
    }

    /// Scope `Canvas` logged in a fresh directory by a writer that syncs every record, and the
    /// outboxes of a sender and a reader.
    private struct Rig {
        let directory = FileManager.default.temporaryDirectory.appending(path: "held-reply-\(UUID().uuidString)")
        let writer = ScopeLogWriter(policy: .everyRecord, log: ServerLog(sink: nil))
        let scope: LocalScope
        let sender = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("ended") })
        let reader = SessionOutbox(limitBytes: 1 << 20, onEnd: { _ in Issue.record("ended") })

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            scope = LocalScope(name: "Canvas", limits: ServerOptions().limits, dataDirectory: directory, writer: writer,
                               slots: ScopeSlots(limit: 10), idleTimeout: .seconds(3600), clock: ElapsedClock(ContinuousClock()),
                               log: ServerLog(sink: nil))
        }

        func close() {
            writer.finish()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// The change-set records in the scope log in `directory` (read without a lock, as written so far).
    private static func changeSetRecords(in directory: URL) -> Int {
        let logs = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []
        guard let log = logs.first(where: { $0.pathExtension == "scope" }) else { return 0 }
        var count = 0
        _ = try? LogFile.forEachRecord(at: log) { kind, _, _ in if kind == .changeSet { count += 1 } }
        return count
    }

    /// The replies of one group commit go out together: the sender's writer is woken once, after
    /// the commit's last completion, and writes them in one frame on the log writer's thread (no
    /// task), once both records are in the file. The writer thread is held while two change sets
    /// queue, so they share a commit. (`eventually`: the first reply goes through a task.)
    @Test func aGroupCommitsRepliesGoOutInOneFrameFromTheWritersThread() async throws {
        let rig = try Rig()
        defer { rig.close() }
        let (directory, writer, scope, sender, reader) = (rig.directory, rig.writer, rig.scope, rig.sender, rig.reader)
        let transport = RecordingTransport(writer: writer, probe: { Self.changeSetRecords(in: directory) })
        let outboxWriter = OutboxWriter(outbox: sender, transport: transport, core: ServerCore(options: ServerOptions()), token: "t")
        outboxWriter.attach(resumed: false)
        defer { outboxWriter.stop() }
        _ = reader.attach({}, resumed: false)
        await scope.fetch(outbox: sender, scopeIndex: 1, replyTo: 1, chunks: false)
        await scope.fetch(outbox: reader, scopeIndex: 1, replyTo: 1, chunks: false)
        let fetched = reader.takePending(generation: 1)
        guard case .scopeState(_, _, let root, _)? = fetched.last, let object = UUID(wireString: root) else {
            Issue.record("no state: \(fetched)")
            return
        }
        // The first write creates the scope's log (on the writer thread), and is acknowledged.
        await scope.sync(sync(1, index: 2, scopeIndex: 1, object: object), from: sender, identity: .unrestricted)
        #expect(await eventually { transport.sent.withLock { $0.map(\.frame).joined().contains("ScopeSyncReply") } })
        #expect(reader.takePending(generation: 1).count == 1)
        let before = transport.sent.withLock { $0.count }

        let gate = DispatchSemaphore(value: 0)
        let blocked = Atomic<Bool>(false)
        let blocker = Task { await writer.perform { _ in blocked.store(true, ordering: .relaxed); gate.wait() } }
        #expect(await eventually { blocked.load(ordering: .relaxed) })
        await scope.sync(sync(2, index: 3, scopeIndex: 1, object: object), from: sender, identity: .unrestricted)
        await scope.sync(sync(3, index: 4, scopeIndex: 1, object: object), from: sender, identity: .unrestricted)
        #expect(reader.takePending(generation: 1).count == 2, "the reader has both changes while the disk is held")
        #expect(transport.sent.withLock { $0.count } == before, "the sender's replies wait for the records")
        #expect(Self.changeSetRecords(in: directory) == 1, "nothing more is written while the writer thread is held")
        gate.signal()
        await blocker.value
        await writer.perform { _ in }   // after the commit of both appends and its completions
        let after = transport.sent.withLock { Array($0[before...]) }
        #expect(after.count == 1, "one frame for the commit: \(after.map(\.frame))")
        #expect(after.first?.frame.components(separatedBy: "ScopeSyncReply").count == 3, "both replies: \(after.map(\.frame))")
        #expect(after.first?.onWriterThread == true, "written on the log writer's thread")
        #expect(after.first?.probed == 3, "sent once both records were in the file")
    }

    /// The writer thread is held on purpose (an fsync that never ends): the other session gets the
    /// broadcast meanwhile, the sender's reply waits, and comes once the record is written.
    @Test func broadcastsDoNotWaitBehindASlowLogWriter() async throws {
        let rig = try Rig()
        defer { rig.close() }
        let (writer, scope, sender, reader) = (rig.writer, rig.scope, rig.sender, rig.reader)
        _ = sender.attach({}, resumed: false)
        _ = reader.attach({}, resumed: false)
        await scope.fetch(outbox: sender, scopeIndex: 1, replyTo: 1, chunks: false)
        await scope.fetch(outbox: reader, scopeIndex: 1, replyTo: 1, chunks: false)
        #expect(sender.takePending(generation: 1).count == 2)
        let fetched = reader.takePending(generation: 1)
        guard case .scopeState(_, _, let root, _)? = fetched.last, let object = UUID(wireString: root) else {
            Issue.record("no state: \(fetched)")
            return
        }
        await scope.sync(sync(1, index: 2, scopeIndex: 1, object: object), from: sender, identity: .unrestricted)

        // Block the writer thread until the gate opens.
        let gate = DispatchSemaphore(value: 0)
        let blocked = Atomic<Bool>(false)
        let blocker = Task { await writer.perform { _ in blocked.store(true, ordering: .relaxed); gate.wait() } }
        #expect(await eventually { blocked.load(ordering: .relaxed) })
        let first = sender.takePending(generation: 1)
        let seen = reader.takePending(generation: 1)
        #expect(first.count == 1 && first.allSatisfy(isReply), "\(first)")
        #expect(seen.count == 1 && seen.allSatisfy(isBroadcast), "the first change reached the reader: \(seen)")

        await scope.sync(sync(2, index: 3, scopeIndex: 1, object: object), from: sender, identity: .unrestricted)
        let broadcast = reader.takePending(generation: 1)
        #expect(broadcast.count == 1 && broadcast.allSatisfy(isBroadcast), "the reader has the change while the disk is held: \(broadcast)")
        #expect(sender.takePending(generation: 1).isEmpty, "the sender's reply waits for the record")

        gate.signal()
        await blocker.value
        await writer.perform { _ in }   // after the append and its completion
        let replies = sender.takePending(generation: 1)
        #expect(replies.count == 1 && replies.allSatisfy(isReply))
    }
}
