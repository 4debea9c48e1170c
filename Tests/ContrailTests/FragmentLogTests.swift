import Contrail
import Foundation
import Testing

@MainActor
@Suite struct FragmentLogTests {
    func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-fragmentlog-\(UUID().uuidString).log")
    }

    func makeCanvas() -> (Scope, Canvas) {
        let scope = Scope(name: "Canvas")
        let canvas = Canvas()
        scope.root = canvas
        return (scope, canvas)
    }

    /// A synced canvas scope (local change sets stay pending) recording into a new log at `url`.
    func makeSyncedLoggedCanvas(at url: URL) throws -> (Scope, Canvas, FragmentLog) {
        let (scope, canvas) = makeCanvas()
        scope.isSynced = true
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        return (scope, canvas, log)
    }

    /// Writes a log with three change sets after the initial snapshot and returns the final state.
    func writeSampleLog(at url: URL) throws -> JSON {
        let (scope, canvas) = makeCanvas()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        let shape = Shape()
        canvas.shapes = [shape]
        scope.flush()
        shape.x = 42
        scope.modify(message: "move") { shape.y = 7 }
        canvas.name = "last"
        scope.flush()
        try log.close()
        return scope.stateJSON()
    }

    @Test func restoresEverythingIntoAFreshScope() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let state = try writeSampleLog(at: url)
        let restored = Scope(name: "Canvas")
        let log = FragmentLog(url: url)
        let report = try log.attach(to: restored)
        #expect(report.records == 5)
        #expect(report.tornTail == nil)
        #expect(restored.stateJSON() == state)
        #expect(restored.root is Canvas)
        try log.close()
    }

    @Test func existingRootAdoptsTheLoggedIdentity() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let state = try writeSampleLog(at: url)
        let (scope, _) = makeCanvas()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        #expect(scope.stateJSON() == state)
        try log.close()
    }

    @Test func historyListsChangeSetsWithMessages() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try writeSampleLog(at: url)
        let history = try FragmentLog.history(at: url)
        #expect(history.map(\.message) == [nil, nil, "move", nil])
        #expect(history.allSatisfy { $0.origin == "local" })
    }

    @Test func tornLastRecordAtEveryOffsetKeepsEarlierRecords() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try writeSampleLog(at: url)
        let bytes = try Data(contentsOf: url)
        let records = try LogFile.read(at: url).records
        let lastOffset = try #require(records.last?.offset)
        // The sync marker after the last record is not a change set: cuts end inside the record.
        let lastEnd = lastOffset + 13 + (records.last?.payload.count ?? 0)
        // The state after all but the last record.
        let expected: JSON = try {
            let cut = temporaryURL()
            defer { try? FileManager.default.removeItem(at: cut) }
            try bytes.prefix(lastOffset).write(to: cut)
            let scope = Scope(name: "Canvas")
            let log = FragmentLog(url: cut)
            try log.attach(to: scope)
            try log.close()
            return scope.stateJSON()
        }()
        for length in lastOffset + 1..<lastEnd {
            let cut = temporaryURL()
            defer { try? FileManager.default.removeItem(at: cut) }
            try bytes.prefix(length).write(to: cut)
            let scope = Scope(name: "Canvas")
            let log = FragmentLog(url: cut)
            let report = try log.attach(to: scope)
            #expect(report.records == records.count - 1)
            #expect(report.tornTail?.offset == lastOffset)
            #expect(scope.stateJSON() == expected)
            try log.close()
        }
    }

    @Test func corruptionInTheMiddleIsATypedErrorWithOffset() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try writeSampleLog(at: url)
        let records = try LogFile.read(at: url).records
        var bytes = try Data(contentsOf: url)
        let victim = records[1].offset + 12
        bytes[victim] ^= 0xFF
        try bytes.write(to: url)
        let log = FragmentLog(url: url)
        #expect(throws: FragmentLogError.self) { try log.attach(to: Scope(name: "Canvas")) }
        do {
            try log.attach(to: Scope(name: "Canvas"))
        } catch .file(.corruptRecord(let offset, _)) {
            #expect(offset == records[1].offset)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// Damage is never taken for a torn tail (issue 23): a flipped bit or a zeroed 512-byte block
    /// at a random offset of a closed log, compacted or not, either leaves the restore complete or
    /// makes `attach` throw a typed error and leaves the file as it was; never a silently shorter scope.
    @Test func bitFlipsAndZeroedBlocksAreRestoredOrATypedErrorNeverSilentlyLost() async throws {
        var random = SystemRandomNumberGenerator()
        var (restoredCount, refused) = (0, 0)
        for trial in 0..<40 {
            let url = temporaryURL()
            defer {
                for suffix in ["", ".previous", ".synced"] { try? FileManager.default.removeItem(atPath: url.path(percentEncoded: false) + suffix) }
            }
            let (scope, canvas) = makeCanvas()
            let log = FragmentLog(url: url)
            try log.attach(to: scope)
            for step in 0..<Int.random(in: 1...60, using: &random) {
                let shape = Shape()
                shape.x = Double(step)
                canvas.shapes.append(shape)
                scope.flush()
                if step % 7 == 3 { try await log.waitUntilDurable() }
            }
            if trial % 2 == 0 {
                try log.compact()
                canvas.name = "after compaction"
                scope.flush()
            }
            try log.close()
            let state = scope.stateJSON()
            var bytes = Array(try Data(contentsOf: url))
            let context: String
            if Bool.random(using: &random) {
                let offset = Int.random(in: 16..<bytes.count, using: &random)
                bytes[offset] ^= 1 << UInt8.random(in: 0..<8, using: &random)
                context = "trial \(trial): bit flipped at \(offset) of \(bytes.count)"
            } else {
                let sector = Int.random(in: 0...((bytes.count - 1) / 512), using: &random)
                for index in max(sector * 512, 16)..<min(sector * 512 + 512, bytes.count) { bytes[index] = 0 }
                context = "trial \(trial): sector \(sector) zeroed of \(bytes.count) bytes"
            }
            try Data(bytes).write(to: url)
            let restored = Scope(name: "Canvas")
            let reopened = FragmentLog(url: url)
            do {
                try reopened.attach(to: restored)
                #expect(restored.stateJSON() == state, "restored, but not everything: \(context)")
                try reopened.close()
                restoredCount += 1
            } catch {
                refused += 1
                #expect(Array(try Data(contentsOf: url)) == bytes, "the damaged file is left as it was: \(context)")
            }
        }
        #expect(refused > 0)
        print("fragment log damage: 40 trials, \(restoredCount) restored everything, \(refused) refused with a typed error")
    }

    @Test func compactionKeepsStateAndShrinksTheFile() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas) = makeCanvas()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        let shape = Shape()
        canvas.shapes = [shape]
        for step in 0..<200 {
            shape.x = Double(step)
            scope.flush()
        }
        try await log.waitUntilDurable()
        // Where the records end (the open file is longer: preallocated ahead of the appends).
        func recordsEnd() throws -> Int { try LogFile.read(at: url).records.last.map { $0.offset + 13 + $0.payload.count } ?? 0 }
        let before = try recordsEnd()
        try log.compact()
        try await log.waitUntilDurable()
        let after = try recordsEnd()
        #expect(after < before / 10)
        shape.y = 3
        scope.flush()
        try log.close()
        let restored = Scope(name: "Canvas")
        let reopened = FragmentLog(url: url)
        try reopened.attach(to: restored)
        #expect(restored.stateJSON() == scope.stateJSON())
        try reopened.close()
    }

    @Test func largeScopeSurvivesSaveCompactAndRestore() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = Node()
        let scope = Scope(name: "Big")
        scope.root = root
        let log = FragmentLog(url: url, fsync: .never)
        try log.attach(to: scope)
        var groups: [Node] = []
        for group in 0..<100 {
            let node = Node()
            node.label = "group \(group)"
            node.children = (0..<999).map { index in
                let leaf = Node()
                leaf.label = "\(group).\(index)"
                return leaf
            }
            groups.append(node)
        }
        root.children = groups
        scope.flush()
        #expect(scope.count == 100_001)
        try log.compact()
        try log.close()
        let restored = Scope(name: "Big")
        let reopened = FragmentLog(url: url, fsync: .never)
        let report = try reopened.attach(to: restored)
        #expect(report.records == 1)
        #expect(restored.count == 100_001)
        #expect(restored.stateJSON() == scope.stateJSON())
        try reopened.close()
    }

    @Test func unsettledLocalChangeSetsAreRestoredAsPendingAndSurviveCompaction() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas, log) = try makeSyncedLoggedCanvas(at: url)
        canvas.name = "acknowledged"
        let first = try #require(scope.flush())
        first.settle(.completed)
        canvas.name = "unsent"
        canvas.shapes.append(Shape())
        let second = try #require(scope.flush())
        #expect(second.state == .syncing)
        try log.close()

        let restored = Scope(name: "Canvas")
        let reopened = FragmentLog(url: url)
        #expect(try reopened.attach(to: restored).pendingChangeSets == 1)
        #expect((restored.root as? Canvas)?.name == "unsent")
        try reopened.compact()
        try reopened.close()

        let afterCompaction = Scope(name: "Canvas")
        let third = FragmentLog(url: url)
        #expect(try third.attach(to: afterCompaction).pendingChangeSets == 1)
        #expect(afterCompaction.stateJSON() == scope.stateJSON())
        try third.close()
    }

    /// Offline change sets that add objects and then reference them come back as they were made:
    /// the same fragments in the same order, each applied on top of the one before (not rebuilt
    /// from the final values), also after a compaction; a settled one does not come back.
    @Test func pendingChangeSetsAreRestoredAsMadeInOrder() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas, log) = try makeSyncedLoggedCanvas(at: url)
        let first = Shape()
        canvas.shapes.append(first)
        let made1 = try #require(scope.flush())
        let second = Shape()
        canvas.shapes.append(second)
        canvas.highlighted = second
        first.x = 5
        let made2 = try #require(scope.flush())
        canvas.name = "acknowledged"
        try #require(scope.flush()).settle(.completed)
        canvas.shapes.removeFirst()
        second.y = 9
        let made3 = try #require(scope.flush())
        try log.close()
        let made = [made1, made2, made3]

        for round in 0..<2 {
            let restored = Scope(name: "Canvas")
            let reopened = FragmentLog(url: url)
            let report = try reopened.attach(to: restored)
            #expect(report.pendingChangeSets == 3, "round \(round)")
            let pending = restored.history.filter { $0.origin == .local && $0.state == .syncing }
            #expect(pending.map(\.fragments) == made.map(\.fragments), "round \(round): resent exactly as made")
            #expect(pending.map(\.message) == made.map(\.message))
            #expect(pending.map(\.id) == made.map(\.id), "round \(round): each keeps its id, so a server recognises the resend")
            #expect(restored.stateJSON() == scope.stateJSON())
            if round == 0 { try reopened.compact() }
            try reopened.close()
            if round == 0 {
                // Originals are the values before each change set (not the current ones), so a
                // revert works (after close: a revert settles, and the log would record that).
                let restoredCanvas = try #require(restored.root as? Canvas)
                pending[1].revert()
                #expect(restoredCanvas.highlighted == nil)
                #expect(restoredCanvas.shapes.map(\.uuid) == [first.uuid])
            }
        }
    }

    /// A settle marker read during restore takes its change set out again, and a corrupt pending
    /// record is a typed error that leaves nothing half-restored.
    @Test func settledAndCorruptPendingRecordsOnRestore() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas, log) = try makeSyncedLoggedCanvas(at: url)
        canvas.name = "one"
        let one = try #require(scope.flush())
        canvas.name = "two"
        _ = try #require(scope.flush())
        one.settle(.completed)
        try log.close()
        let restored = Scope(name: "Canvas")
        let reopened = FragmentLog(url: url)
        #expect(try reopened.attach(to: restored).pendingChangeSets == 1)
        #expect(restored.history.filter { $0.origin == .local && $0.state == .syncing }.map(\.message) == [nil])
        #expect(restored.history.filter { $0.origin == .local && $0.state == .syncing }.first?.fragments.first?.properties["name"] == "two")
        try reopened.close()

        // A pending record with a value of the wrong type: typed error, nothing pending afterwards.
        // (An unknown class is no longer an error: such objects are kept, Protocol §8.23.)
        let (bad, _) = try LogFile.open(at: url)
        try bad.append(.changeSet, Array(#"{"fragments":[{"type":"add","uuid":"6f7a2c1e-0000-4000-8000-000000000001","clsName":"Shape","properties":{"x":"not a number"}}],"root":null,"origin":"local","atomic":false,"seq":99}"#.utf8))
        try bad.close()
        let broken = Scope(name: "Canvas")
        #expect(throws: FragmentLogError.self) { try FragmentLog(url: url).attach(to: broken) }
        #expect(broken.history.filter { $0.origin == .local && $0.state == .syncing }.count <= 1)
    }

    /// A log dropped without `close()` still writes its queue and lets go of the file (its lock).
    @Test func droppedLogWritesItsQueueAndReleasesTheFile() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas) = makeCanvas()
        do {
            let log = FragmentLog(url: url)
            try log.attach(to: scope)
            canvas.name = "queued before the drop"
            scope.flush()
            #expect(throws: FragmentLogError.self) { try FragmentLog(url: url).attach(to: Scope(name: "Canvas")) }
        }
        // Bounded, and long: on a heavily loaded shared machine the file was still locked after 30 s in 2 of 5 runs (cause not established).
        let deadline = ContinuousClock.now + .seconds(120)
        var reopened: (Scope, FragmentLog)?
        var lastError: FragmentLogError?
        while reopened == nil, ContinuousClock.now < deadline {
            let restored = Scope(name: "Canvas")
            let log = FragmentLog(url: url)
            do {
                try log.attach(to: restored)
                reopened = (restored, log)
            } catch {
                lastError = error
                await Task.yield()
            }
        }
        let (restored, log) = try #require(reopened, "the file was released (last error: \(String(describing: lastError)))")
        #expect((restored.root as? Canvas)?.name == "queued before the drop")
        try log.close()
    }

    @Test func remoteChangeSetsAreLoggedToo() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let (scope, canvas) = makeCanvas()
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        try scope.apply([SyncFragment(kind: .change, uuid: canvas.uuid, className: "Canvas", properties: ["name": "remote"])])
        try log.close()
        #expect(try FragmentLog.history(at: url).map(\.origin) == ["remote"])
    }
}
