import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import ContrailSupport
import Testing

/// Online backups (issue 28): taken while change sets keep arriving, restored offline into a new
/// data directory, and compared with what was acknowledged up to the backup.
@Suite("Admin backups")
struct AdminBackupTests {
    /// What the writers have had acknowledged, per scope, and whether they should stop.
    final class Progress: Sendable {
        private let state: SanitizerVisibleMutex<(counts: [Int], stop: Bool)>
        init(scopes: Int) { state = SanitizerVisibleMutex((Array(repeating: 0, count: scopes), false)) }
        var counts: [Int] { state.withLock { $0.counts } }
        var isStopped: Bool { state.withLock { $0.stop } }
        func acknowledged(_ n: Int, scope: Int) { state.withLock { $0.counts[scope] = n } }
        func stop() { state.withLock { $0.stop = true } }
    }

    /// Keeps sending change sets to scope `scope`, each setting root property `pN` to N, in order;
    /// counts those acknowledged (a reply received) in `progress`, until it is stopped.
    static func keepWriting(_ server: ContrailServer, scope: String, index: Int, progress: Progress) async throws {
        let client = ServerTestClient(server: server)
        try await client.createSession(params: ["user": "writer"])
        let (_, state) = try await client.fetch(scope, index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        var n = 1
        while !progress.isStopped {
            let reply = try await client.sync(index: n + 1, fragments: [Wire.fragment("change", root, "Root", ["p\(n)": .int(Int64(n))])])
            #expect(reply["fragmentReplies"] == [[:]])
            progress.acknowledged(n, scope: index)
            n += 1
        }
    }

    /// The N of root properties p1…pN in `state`, checking they are exactly 1…N (no gap: a prefix
    /// of the scope's order).
    static func prefixLength(_ state: JSON) throws -> Int {
        let root = try #require(state["root"]?.stringValue)
        let properties = try #require(state["objects"]?[root]?["properties"]?.objectValue)
        let numbers = properties.compactMap { key, value -> Int? in
            guard key.hasPrefix("p"), let n = Int(key.dropFirst()) else { return nil }
            #expect(value.int64Value == Int64(n))
            return n
        }.sorted()
        #expect(numbers == Array(1..<(numbers.count + 1)), "a gap in the change sets")
        return numbers.count
    }

    @Test func aBackupUnderConcurrentWritesRestoresEverythingAcknowledgedBeforeIt() async throws {
        let data = AdminTests.temporaryDirectory()
        let backups = AdminTests.temporaryDirectory()
        let restored = AdminTests.temporaryDirectory().appending(path: "restored", directoryHint: .isDirectory)
        defer { for url in [data, backups, restored.deletingLastPathComponent()] { try? FileManager.default.removeItem(at: url) } }
        let server = try ContrailServer(options: AdminTests.options(data: data))
        let scopes = ["A", "B", "C"]
        let progress = Progress(scopes: scopes.count)
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, scope) in scopes.enumerated() {
                    group.addTask { try await Self.keepWriting(server, scope: scope, index: index, progress: progress) }
                }
                try await group.waitForAll()
            }
        }
        // Let every writer get going, then back up while they write.
        #expect(await eventually(.seconds(120)) { progress.counts.allSatisfy { $0 >= 20 } })
        let acknowledgedBefore = progress.counts
        let report = try await server.backup(to: backups.appending(path: "one", directoryHint: .isDirectory))
        let acknowledgedAfter = progress.counts
        // Writes went on during the backup and after it.
        #expect(await eventually(.seconds(120)) { progress.counts[0] > acknowledgedAfter[0] + 5 })
        progress.stop()
        try await writers.value
        #expect(report.scopes.map(\.name) == scopes)
        await #expect(throws: AdminError.backupExists(path: report.directory.path(percentEncoded: false))) {
            try await server.backup(to: report.directory)
        }
        await server.stop()

        let restoredReport = try ContrailServer.restoreBackup(from: report.directory, into: restored)
        #expect(restoredReport.scopes == report.scopes)
        let copy = try ContrailServer(options: AdminTests.options(data: restored))
        for (index, scope) in scopes.enumerated() {
            let length = try Self.prefixLength(try await copy.exportScope(scope))
            #expect(length >= acknowledgedBefore[index], "scope \(scope): \(length) < \(acknowledgedBefore[index]) acknowledged before the backup")
            #expect(length <= acknowledgedAfter[index] + 1, "scope \(scope): \(length) > what was sent by the backup's end")
            #expect(report.scopes[index].objects == 1)
        }
        await copy.stop()
    }

    @Test func aScopeOnDiskIsBackedUpWithoutLoadingItAndRestoreRefusesWhatItCannotTrust() async throws {
        let data = AdminTests.temporaryDirectory()
        let backups = AdminTests.temporaryDirectory()
        let target = AdminTests.temporaryDirectory()
        defer { for url in [data, backups, target] { try? FileManager.default.removeItem(at: url) } }
        let longName = String(repeating: "é", count: 90)  // a hashed file name: the name is read from the log
        let first = try ContrailServer(options: AdminTests.options(data: data))
        let client = ServerTestClient(server: first)
        try await client.createSession(params: ["user": "alice"])
        try await AdminTests.drawCanvas(client, scope: "Cold")
        try await AdminTests.drawCanvas(client, scope: longName, index: 3, scopeIndex: 1)
        let cold = try await first.exportScope("Cold")
        await first.stop()

        let second = try ContrailServer(options: AdminTests.options(data: data))
        #expect(await second.scopes().map(\.name).sorted() == ["Cold", longName].sorted())
        #expect(await second.scopes().allSatisfy { !$0.isLoaded })
        let report = try await second.backup(to: backups.appending(path: "b", directoryHint: .isDirectory))
        #expect(report.scopes.map(\.objects) == [3, 3])
        #expect(await second.scopes().allSatisfy { !$0.isLoaded })  // backed up from disk, not loaded
        await second.stop()

        // An unfinished backup (no manifest) and a non-empty target are refused.
        let unfinished = backups.appending(path: "unfinished", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: unfinished, withIntermediateDirectories: true)
        #expect(throws: AdminError.self) { try ContrailServer.restoreBackup(from: unfinished, into: target) }
        #expect(throws: AdminError.restoreTargetNotEmpty(path: data.path(percentEncoded: false))) {
            try ContrailServer.restoreBackup(from: report.directory, into: data)
        }
        // A damaged log in the backup is refused before anything is copied.
        let damaged = backups.appending(path: "damaged", directoryHint: .isDirectory)
        try FileManager.default.copyItem(at: report.directory, to: damaged)
        let file = damaged.appending(path: report.scopes[0].file)
        var bytes = try [UInt8](Data(contentsOf: file))
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: file)
        #expect(throws: AdminError.self) { try ContrailServer.restoreBackup(from: damaged, into: target) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path(percentEncoded: false)).isEmpty)
        // Positive control: the good backup restores, and a server on it has the scopes.
        _ = try ContrailServer.restoreBackup(from: report.directory, into: target)
        let third = try ContrailServer(options: AdminTests.options(data: target))
        #expect(try await third.exportScope("Cold") == cold)
        #expect(try await third.exportScope(longName)["objects"]?.objectValue?.count == 3)
        await third.stop()
        let memory = try ContrailServer(options: AdminTests.options())
        await #expect(throws: AdminError.noDataDirectory) { try await memory.backup(to: backups.appending(path: "m")) }
        await memory.stop()
    }
}
