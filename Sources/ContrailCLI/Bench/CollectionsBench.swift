import Contrail
import ContrailFuzz
import ContrailServer
import ContrailSupport
import ContrailWebSocket
import Foundation

/// `contrail bench collections`: what collection edits (Protocol §8.24) cost, with a server in this
/// process (its scope log on disk) and clients over its in-memory connector, counting the bytes of
/// every frame each way.
///
/// - `collection.append.wire.nN`: bytes a client sends and receives for one append to a collection
///   of N items (the change set and its reply). Baseline: the same change set with the whole
///   collection and its base (§8.4) and a reply carrying the merged array, as before §8.24.
/// - `collection.append.broadcast.nN`: bytes another Contrail subscriber receives for that append
///   (an edit, §8.24). Baseline: the sender's bytes.
/// - `collection.append.broadcast.original.nN`: bytes a subscriber that did not ask for edits (an
///   original client) receives for it: the whole array. Baseline: the Contrail subscriber's bytes.
/// - `offline.N.log.perEdit`: bytes of client fragment log per offline edit, for N appends to one
///   collection and N/3 value changes, each its own change set. Baseline: the final state's bytes
///   per edit (a snapshot of the scope).
/// - `offline.N.wire.perEdit`: bytes the client sends per edit once back online. Baseline: the
///   same final-state bytes per edit.
/// - `offline.N.broadcast.perEdit`: bytes a Contrail subscriber of the scope receives per edit
///   while the client settles. Baseline: the sender's bytes per edit.
/// - `offline.N.memory.perEdit`: the process's peak resident memory during the run (making the
///   edits offline, restoring them from the log, settling them), above what it held before, per
///   edit (`/proc/self/clear_refs` resets the peak, after the allocator gave back what the runs
///   before freed). Baseline: the final state's bytes per edit.
///   Linear growth keeps it flat as N grows.
/// - `offline.N.settle`: seconds from reconnecting (a restored scope, a new `Client`) to every
///   offline change set settled (sent coalesced, ``ChangeSetBatch``), and the subscriber holding
///   the same state. Baseline: seconds a fresh replica takes to fetch that final state.
///
/// `--offline-edits N,...` or `CONTRAIL_BENCH_OFFLINE` (a comma-separated list of N, e.g.
/// `1000,5000,50000`) replaces the offline sizes (1,000 and 5,000; 60 with `--smoke`). With `CONTRAIL_BENCH_TRACE` set, each run
/// prints when the sender settled, when the subscriber caught up, and the process's peak memory.
@MainActor
enum CollectionsBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        ModelRegistry.register(Shelf.self, Item.self)
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-bench-collections-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var figures = try await append(items: options.smoke ? 300 : 10_000, directory: directory)
        let sizes = options.offlineEdits
            ?? ProcessInfo.processInfo.environment["CONTRAIL_BENCH_OFFLINE"].map { $0.split(separator: ",").compactMap { Int($0) } }
        for adds in sizes ?? (options.smoke ? [60] : [1_000, 5_000]) {
            figures += try await offline(adds: adds, directory: directory)
        }
        return figures
    }

    // MARK: - One append

    static func append(items count: Int, directory: URL) async throws -> [BenchFigure] {
        let server = try makeServer(directory)
        let counter = FrameCounter()
        let scope = Scope(name: "append-\(count)")
        let shelf = Shelf()
        scope.root = shelf
        let client = try await Client.sync(scope, connector: counter.connector(server.connector()))
        let observerScope = Scope(name: scope.name)
        observerScope.root = Shelf()
        let observerCounter = FrameCounter()
        let observer = try await Client.sync(observerScope, connector: observerCounter.connector(server.connector()))
        // A subscriber that does not ask for edits, as an original client: whole arrays.
        let originalScope = Scope(name: scope.name)
        originalScope.root = Shelf()
        let originalCounter = FrameCounter()
        var originalOptions = ClientOptions()
        originalOptions.sendsCollectionEdits = false
        let original = try await Client.sync(originalScope, connector: originalCounter.connector(server.connector()),
                                             options: originalOptions)
        // In change sets of at most 5,000 adds (the server takes 10,000 fragments per message).
        for start in stride(from: 0, to: count, by: 5_000) {
            scope.modify { shelf.left += (start..<min(count, start + 5_000)).map { _ in Item() } }
        }
        try await settled(client, within: .seconds(120))
        guard shelf.left.count == count else { throw SyncBenchError("collections bench: the items were not taken") }
        try await until(.seconds(120)) { (observerScope.root as? Shelf)?.left.count == count && (originalScope.root as? Shelf)?.left.count == count }
        let (sentBefore, receivedBefore) = counter.totals
        let observedBefore = observerCounter.totals.received
        let originalBefore = originalCounter.totals.received
        let appended = Item()
        appended.label = "appended"
        scope.modify { shelf.left.append(appended) }
        try await settled(client, within: .seconds(60))
        try await until(.seconds(60)) {
            (observerScope.root as? Shelf)?.left.last?.uuid == appended.uuid && (originalScope.root as? Shelf)?.left.last?.uuid == appended.uuid
        }
        let (sent, received) = counter.totals
        let bytes = Double(sent - sentBefore + received - receivedBefore)
        let broadcast = Double(observerCounter.totals.received - observedBefore)
        let wholeBroadcast = Double(originalCounter.totals.received - originalBefore)
        guard observerScope.stateJSON() == scope.stateJSON(), originalScope.stateJSON() == scope.stateJSON() else {
            throw SyncBenchError("collections bench: a subscriber does not hold the sender's state")
        }
        // Baseline: the change set as sent whole with its base, and a reply carrying the merged array.
        guard let changeSet = scope.history.last else { throw SyncBenchError("collections bench: no change set") }
        let whole = MessageFrame.encode([.scopeSync(ScopeSync(index: 3, scopeIndex: 0, fragments: changeSet.fragments, changeSetID: changeSet.id))],
                                        asArray: false)
        let items = JSON.array(shelf.left.map { .string($0.uuid.uuidString.lowercased()) })
        let replies = changeSet.fragments.map { $0.kind == .change ? JSON.object(["modifications": .object(["left": items])]) : JSON.object([:]) }
        let reply: JSON = ["type": "ScopeSyncReply", "index": 3, "replyTo": 3, "fragmentReplies": .array(replies)]
        let baseline = Double(whole.utf8.count + reply.jsonString.utf8.count)
        await original.close()
        await observer.close()
        await client.close()
        await server.stop()
        return [
            BenchFigure(name: "collection.append.wire.n\(count)", value: bytes, unit: "bytes", baseline: baseline),
            BenchFigure(name: "collection.append.broadcast.n\(count)", value: broadcast, unit: "bytes", baseline: bytes),
            BenchFigure(name: "collection.append.broadcast.original.n\(count)", value: wholeBroadcast, unit: "bytes", baseline: broadcast),
        ]
    }

    // MARK: - Offline edits

    /// One offline run: `adds` appends to one collection and `adds / 3` label changes, each its own
    /// change set, logged; then the log restored into a fresh scope and synced.
    struct OfflineRun {
        var edits = 0
        var logBytes = 0
        var sentBytes = 0
        var broadcastBytes = 0
        var stateBytes = 0
        var settleSeconds = 0.0
        /// The peak resident memory during the run above what the process held before it (bytes).
        var peakBytes = 0
        /// Seconds a fresh replica took to fetch the final state.
        var fetchSeconds = 0.0
    }

    static func offline(adds: Int, directory: URL) async throws -> [BenchFigure] {
        let edits = try await offlineRun(adds: adds, directory: directory)
        let perEdit = { (bytes: Int) in Double(bytes) / Double(edits.edits) }
        return [
            BenchFigure(name: "offline.\(adds).log.perEdit", value: perEdit(edits.logBytes), unit: "bytes", baseline: perEdit(edits.stateBytes)),
            BenchFigure(name: "offline.\(adds).wire.perEdit", value: perEdit(edits.sentBytes), unit: "bytes", baseline: perEdit(edits.stateBytes)),
            BenchFigure(name: "offline.\(adds).broadcast.perEdit", value: perEdit(edits.broadcastBytes), unit: "bytes",
                        baseline: perEdit(edits.sentBytes)),
            BenchFigure(name: "offline.\(adds).memory.perEdit", value: perEdit(edits.peakBytes), unit: "bytes", baseline: perEdit(edits.stateBytes)),
            BenchFigure(name: "offline.\(adds).settle", value: edits.settleSeconds, unit: "s", baseline: edits.fetchSeconds),
        ]
    }

    static func offlineRun(adds: Int, directory: URL) async throws -> OfflineRun {
        // What the runs before freed goes back to the system first: otherwise this run grows into
        // it unseen, and a small run looks free (the append run frees tens of MiB).
        Platform.releaseFreeMemory()
        let memoryBefore = try BigScopeBench.resetPeak()
        let server = try makeServer(directory)
        let name = "offline-\(adds)"
        let logURL = directory.appending(path: "\(name).log")
        // Online first, so that the server and the log know the shelf.
        let scope = Scope(name: name)
        let shelf = Shelf()
        scope.root = shelf
        let log = FragmentLog(url: logURL)
        try log.attach(to: scope)
        let first = try await Client.sync(scope, connector: server.connector())
        shelf.title = "online"
        try await settled(first, within: .seconds(60))
        await first.close()
        try await log.waitUntilDurable()
        let sizeOnline = log.recordsEnd

        // Offline: every change set stays pending in the log.
        scope.syncOffline()
        var run = OfflineRun()
        var random = SplitMix64(seed: UInt64(adds))
        let offlineStarted = ContinuousClock.now
        for index in 0..<adds {
            scope.modify {
                let item = Item()
                item.label = "item \(index)"
                shelf.left.append(item)
            }
            run.edits += 1
            if index % 3 == 2 {
                let item = shelf.left[Int(random.next() % UInt64(shelf.left.count))]
                scope.modify { item.label = "changed \(index)" }
                run.edits += 1
            }
        }
        try await log.waitUntilDurable()
        run.logBytes = log.recordsEnd - sizeOnline  // the file itself is preallocated ahead
        trace("offline \(name): \(run.edits) edits made in \(Stopwatch.seconds(ContinuousClock.now - offlineStarted)) s, log \(run.logBytes / max(run.edits, 1)) B per edit",
              since: memoryBefore)
        run.stateBytes = scope.stateJSON().serialized().count
        let expected = scope.stateJSON()
        try log.close()

        // Back online: a fresh process's scope, restored from the log, syncs it all.
        let restored = Scope(name: name)
        let reopened = FragmentLog(url: logURL)
        let restoreStarted = ContinuousClock.now
        let report = try reopened.attach(to: restored)
        // Every offline edit is pending (and the online one may be too, if its settle marker was not
        // written before the first client closed).
        guard report.pendingChangeSets >= run.edits else {
            throw SyncBenchError("collections bench: \(report.pendingChangeSets) of \(run.edits) change sets restored")
        }
        trace("offline \(name): restored in \(Stopwatch.seconds(ContinuousClock.now - restoreStarted)) s", since: memoryBefore)
        // A Contrail subscriber, online meanwhile: it receives every change set as the server applies it.
        let watcher = Scope(name: name)
        watcher.root = Shelf()
        let watcherCounter = FrameCounter()
        let watching = try await Client.sync(watcher, connector: watcherCounter.connector(server.connector()))
        let watchedBefore = watcherCounter.totals.received
        let counter = FrameCounter()
        let started = ContinuousClock.now
        let client = try await Client.sync(restored, connector: counter.connector(server.connector()))
        try await settled(client, within: .seconds(600))
        let senderSettled = Stopwatch.seconds(ContinuousClock.now - started)
        try await until(.seconds(600)) { watcher.stateJSON() == expected }
        run.settleSeconds = Stopwatch.seconds(ContinuousClock.now - started)
        run.peakBytes = max(0, try BigScopeBench.status("VmHWM:") - memoryBefore)
        trace("offline \(name): sender settled after \(senderSettled) s, subscriber after \(run.settleSeconds) s", since: memoryBefore)
        run.sentBytes = counter.totals.sent
        run.broadcastBytes = watcherCounter.totals.received - watchedBefore
        await watching.close()
        guard restored.stateJSON() == expected else { throw SyncBenchError("collections bench: the restored scope is not what was made offline") }
        // The work was done: a fresh replica fetches every offline edit from the server.
        let fresh = Scope(name: name)
        fresh.root = Shelf()
        let fetchStarted = ContinuousClock.now
        let check = try await Client.sync(fresh, connector: server.connector())
        run.fetchSeconds = Stopwatch.seconds(ContinuousClock.now - fetchStarted)
        try await until(.seconds(120)) { fresh.stateJSON() == expected }
        await check.close()
        await client.close()
        try reopened.close()
        await server.stop()
        return run
    }

    // MARK: - Helpers

    /// With `CONTRAIL_BENCH_TRACE` set: `what`, with the resident memory now and the peak so far
    /// above `before` (MiB), on standard error. Where an offline run's memory goes, phase by phase.
    static func trace(_ what: String, since before: Int) {
        guard ProcessInfo.processInfo.environment["CONTRAIL_BENCH_TRACE"] != nil else { return }
        let now = Double(((try? BigScopeBench.status("VmRSS:")) ?? 0) - before) / Double(1 << 20)
        let peak = Double(((try? BigScopeBench.status("VmHWM:")) ?? 0) - before) / Double(1 << 20)
        FileHandle.standardError.write(Data("\(what): resident +\(Int(now)) MiB, peak +\(Int(peak)) MiB\n".utf8))
    }

    static func makeServer(_ directory: URL) throws -> ContrailServer {
        var options = ServerOptions()
        options.log = nil
        options.establishTimeout = .seconds(120)
        options.dataDirectory = directory.appending(path: "server-\(UUID().uuidString)")
        return try ContrailServer(options: options)
    }

    static func settled(_ client: Client, within timeout: Duration) async throws {
        try await until(timeout) { client.session?.pendingChangeSets == 0 }
    }

    /// Polls `condition` on the main actor (each turn lets the client's messages in) until it holds.
    static func until(_ timeout: Duration, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { throw SyncBenchError("collections bench: not settled within \(timeout)") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Bytes of frames sent and received through the transports of its ``connector(_:)``s.
final class FrameCounter: Sendable {
    private let counts = SanitizerVisibleMutex<(sent: Int, received: Int)>((0, 0))

    var totals: (sent: Int, received: Int) { counts.withLock { $0 } }

    /// `base`, with every frame its transports carry counted here.
    func connector(_ base: any SyncConnector) -> TappedConnector {
        TappedConnector(base: base) { [self] frame, direction in
            counts.withLock { counts in
                switch direction {
                case .sent: counts.sent += frame.utf8.count
                case .received: counts.received += frame.utf8.count
                }
            }
            return true
        }
    }
}
