import Foundation
import Testing
@testable import Contrail
@testable import ContrailWire
import ContrailSupport

/// A fresh directory under the system temp dir, removed after `body`.
private func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("LogFileTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private func fileBytes(_ url: URL) throws -> [UInt8] { try [UInt8](Data(contentsOf: url)) }

private func writeBytes(_ bytes: [UInt8], to url: URL) throws { try Data(bytes).write(to: url) }

/// Writes a log of `payloads` (all change sets) and returns each record's offset.
private func makeLog(at url: URL, _ payloads: [[UInt8]]) throws -> [Int] {
    let (log, _) = try LogFile.open(at: url, fsync: .never)
    let offsets = try payloads.map { try log.append(.changeSet, $0) }
    try log.close()
    return offsets
}

/// The error `body` throws (recording an issue if it is not a `LogFileError`).
private func logError(_ body: () throws -> Void) -> LogFileError? {
    do { try body() } catch let error as LogFileError { return error } catch {
        Issue.record("unexpected error \(error)")
    }
    return nil
}

/// Whether `error` is `corruptRecord` at `offset`.
private func isCorruptRecord(_ error: LogFileError?, at offset: Int) -> Bool {
    if case .corruptRecord(offset, _)? = error { return true }
    return false
}

/// Bit-at-a-time CRC-32C: the reference the table-driven version is checked against.
private func referenceCRC32C(_ data: [UInt8]) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for byte in data {
        c ^= UInt32(byte)
        for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
    }
    return ~c
}

@Suite struct LogFileTests {
    // MARK: CRC-32C

    @Test func crcKnownVectors() {
        #expect(CRC32C.checksum(bytes("123456789")) == 0xE306_9283)
        #expect(bytes("123456789").withUnsafeBytes { CRC32C.tableExtend(0, $0) } == 0xE306_9283)
        #if arch(x86_64)
        // Every x86-64 machine this runs on since 2008 has SSE 4.2; a false here means the check is broken.
        #expect(CRC32C.usesHardware)
        #endif
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720 (iSCSI) B.4 test vectors.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
    }

    @Test func crcMatchesReferenceAtEveryAlignmentAndSplit() {
        var generator = SystemRandomNumberGenerator()
        let data = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<9 {
            for length in stride(from: 1, through: 200, by: 7) {
                let slice = Array(data[start..<(start + length)])
                let expected = referenceCRC32C(slice)
                #expect(CRC32C.checksum(data[start..<(start + length)]) == expected)  // the CPU's instruction, if it has it
                #expect(slice.withUnsafeBytes { CRC32C.tableExtend(0, $0) } == expected)
                let split = length / 3
                var crc = CRC32C()
                crc.update(slice[0..<split])
                crc.update(byte: slice[split])
                crc.update(slice[(split + 1)...])
                #expect(crc.value == expected)
            }
        }
    }

    // MARK: Round trips

    @Test func aCopyOfTheDescriptorElsewhereDoesNotKeepAClosedLogLocked() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("held.log")
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            // Positive control: while the log is open, a second writer is refused.
            #expect(logError { _ = try LogFile.open(at: url) } == .locked(path: url.path))
            // A child process being spawned right now holds a copy of every open descriptor until it
            // execs (then the log's, opened close-on-exec, goes). A dup stands in for that copy.
            let fd = try #require(Self.openDescriptor(of: url))
            let copy = dup(fd)
            #expect(copy >= 0)
            defer { close(copy) }
            try log.close()
            // Closing released the lock although the copy still refers to the same open file.
            let (reopened, _) = try LogFile.open(at: url, fsync: .never)
            try reopened.close()
        }
    }

    /// The descriptor this process has open on `url`, found through /proc/self/fd.
    private static func openDescriptor(of url: URL) -> Int32? {
        let target = url.resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap(Int32.init).first { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == target
        }
    }

    @Test func appendAndReopenRoundTrip() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("a.log")
            let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }  // larger than the append buffer
            let (log, recovery) = try LogFile.open(at: url)
            #expect(recovery == LogRecovery(records: [], truncatedTail: nil))
            #expect(log.size == 16)
            var expected: [LogRecord] = []
            func add(_ kind: LogRecord.Kind, _ payload: [UInt8], _ offset: Int) {
                expected.append(LogRecord(kind: kind, payload: payload, offset: offset))
            }
            add(.snapshot, bytes("{\"state\":1}"), try log.append(.snapshot, bytes("{\"state\":1}")))
            add(.changeSet, [], try log.append(.changeSet, [UInt8]()))
            add(.changeSet, bytes("data"), try log.append(.changeSet, Data("data".utf8)))
            add(.changeSet, bytes("utf8"), try log.append(.changeSet, "utf8".utf8))
            add(.changeSet, bytes("lice"), try log.append(.changeSet, bytes("slice")[1...]))
            add(.changeSet, bytes("lazy"), try log.append(.changeSet, bytes("LAZY").lazy.map { $0 | 0x20 }))
            add(.changeSet, big, try log.append(.changeSet, big))
            add(.changeSet, bytes("after"), try log.append(.changeSet, bytes("after")))
            #expect(expected.map(\.offset) == [16, 40, 53, 70, 87, 104, 121, 200_134])
            #expect(log.size == 200_152)
            try log.close()

            #expect(try fileBytes(url).count == 200_152)
            #expect(try LogFile.read(at: url) == LogRecovery(records: expected, truncatedTail: nil))
            let (reopened, again) = try LogFile.open(at: url)
            #expect(again == LogRecovery(records: expected, truncatedTail: nil))
            #expect(reopened.size == 200_152)
            try reopened.close()
        }
    }

    @Test func tenThousandRecordsRoundTrip() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("large.log")
            let payloads = (0..<10_000).map { i in
                Array("{\"change\":\(i),\"pad\":\"\(String(repeating: "x", count: i % 300))\"}".utf8)
            }
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            let offsets = try payloads.map { try log.append(.changeSet, $0) }
            try log.close()

            let (reopened, recovery) = try LogFile.open(at: url, fsync: .never)
            defer { try? reopened.close() }
            #expect(recovery.truncatedTail == nil)
            #expect(recovery.records.count == 10_000)
            #expect(recovery.records.map(\.payload) == payloads)
            #expect(recovery.records.map(\.offset) == offsets)

            // The zero-copy reader sees the same records.
            var seen = 0
            var allEqual = true
            let tail = try LogFile.forEachRecord(at: url) { kind, offset, payload in
                allEqual = allEqual && kind == .changeSet && offset == offsets[seen] && payload.elementsEqual(payloads[seen])
                seen += 1
            }
            #expect(tail == nil && seen == 10_000 && allEqual)
        }
    }

    @Test func openWithAVisitorSeesEveryRecordAndCutsTheTornTail() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("visit.log")
            let offsets = try makeLog(at: url, [bytes("a"), bytes("bb"), bytes("ccc")])
            let full = try fileBytes(url)
            try writeBytes(Array(full.dropLast(2)), to: url)
            var seen: [(LogRecord.Kind, Int, [UInt8])] = []
            let (log, tail) = try LogFile.open(at: url) { kind, offset, payload in seen.append((kind, offset, Array(payload))) }
            #expect(seen.map(\.1) == [offsets[0], offsets[1]])
            #expect(seen.map(\.2) == [bytes("a"), bytes("bb")])
            #expect(tail == TornTail(offset: offsets[2], discardedBytes: full.count - 2 - offsets[2], reason: "incomplete record (14 of 16 bytes)"))
            #expect(log.size == offsets[2])
            try log.close()
        }
    }

    // MARK: Torn tails and corruption

    @Test func truncationAtEveryByteOfTheLastRecordKeepsEarlierRecords() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("torn.log")
            let payloads = [bytes("first record"), bytes("second"), bytes("the last record, which a crash will tear")]
            let offsets = try makeLog(at: url, payloads)
            let full = try fileBytes(url)
            let last = offsets[2]
            let earlier = [LogRecord(kind: .changeSet, payload: payloads[0], offset: offsets[0]),
                           LogRecord(kind: .changeSet, payload: payloads[1], offset: offsets[1])]
            for cut in last..<full.count {
                try writeBytes(Array(full[0..<cut]), to: url)
                // read() reports but leaves the file alone.
                let inspected = try LogFile.read(at: url)
                #expect(inspected.records == earlier)
                #expect(inspected.truncatedTail?.offset == (cut == last ? nil : last))
                #expect(try fileBytes(url).count == cut)

                let (log, recovery) = try LogFile.open(at: url, fsync: .never)
                #expect(recovery.records == earlier, "cut at \(cut)")
                if cut == last {
                    #expect(recovery.truncatedTail == nil)
                } else {
                    #expect(recovery.truncatedTail?.offset == last, "cut at \(cut)")
                    #expect(recovery.truncatedTail?.discardedBytes == cut - last, "cut at \(cut)")
                }
                #expect(try fileBytes(url).count == last)  // cut on disk
                // Appending continues cleanly after the cut.
                #expect(try log.append(.changeSet, bytes("again")) == last)
                try log.close()
                let after = try LogFile.read(at: url)
                #expect(after.truncatedTail == nil)
                #expect(after.records.map(\.payload) == [payloads[0], payloads[1], bytes("again")])
            }
        }
    }

    @Test func flippedByteInTheLastRecordIsATornTail() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("flip-last.log")
            let payloads = [bytes("one"), bytes("two"), bytes("three, the last")]
            let offsets = try makeLog(at: url, payloads)
            let full = try fileBytes(url)
            for position in offsets[2]..<full.count {
                var damaged = full
                damaged[position] ^= 0x40
                try writeBytes(damaged, to: url)
                let (log, recovery) = try LogFile.open(at: url)
                #expect(recovery.records.map(\.payload) == [payloads[0], payloads[1]], "flip at \(position)")
                #expect(recovery.truncatedTail?.offset == offsets[2], "flip at \(position)")
                #expect(recovery.truncatedTail?.discardedBytes == full.count - offsets[2])
                try log.close()
            }
        }
    }

    @Test func flippedByteInAMiddleRecordIsCorruptionAtItsOffset() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("flip-middle.log")
            let payloads = [bytes("one"), bytes("the middle record"), bytes("three")]
            let offsets = try makeLog(at: url, payloads)
            let full = try fileBytes(url)
            for position in offsets[1]..<offsets[2] {
                var damaged = full
                damaged[position] ^= 0x01
                try writeBytes(damaged, to: url)
                let error = logError { _ = try LogFile.open(at: url) }
                #expect(isCorruptRecord(error, at: offsets[1]), "flip at \(position): \(String(describing: error))")
                #expect(try fileBytes(url) == damaged)  // nothing cut
                // Read-only inspection stops at the same place after showing the records before it.
                var seen: [Int] = []
                let readError = logError { _ = try LogFile.forEachRecord(at: url) { _, offset, _ in seen.append(offset) } }
                #expect(readError == error)
                #expect(seen == [offsets[0]])
            }
        }
    }

    @Test func truncateCutsAtTheOffsetACorruptRecordErrorNames() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("repair.log")
            let offsets = try makeLog(at: url, [bytes("keep"), bytes("damaged"), bytes("lost")])
            var damaged = try fileBytes(url)
            damaged[offsets[1] + 15] ^= 0xFF
            try writeBytes(damaged, to: url)
            let error = logError { _ = try LogFile.open(at: url) }
            #expect(isCorruptRecord(error, at: offsets[1]))
            // Not a record boundary: refused, file unchanged.
            #expect(isCorruptRecord(logError { try LogFile.truncate(at: url, to: offsets[1] - 1) }, at: offsets[0]))
            #expect(isCorruptRecord(logError { try LogFile.truncate(at: url, to: 3) }, at: 3))
            #expect(try fileBytes(url) == damaged)
            try LogFile.truncate(at: url, to: offsets[1])
            let (log, recovery) = try LogFile.open(at: url)
            #expect(recovery == LogRecovery(records: [LogRecord(kind: .changeSet, payload: bytes("keep"), offset: offsets[0])], truncatedTail: nil))
            #expect(logError { try LogFile.truncate(at: url, to: offsets[1]) } == .locked(path: url.path))
            try log.close()
        }
    }

    @Test func damagedLengthInTheMiddleIsNotMistakenForATornTail() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("length.log")
            let offsets = try makeLog(at: url, [bytes("a"), bytes("b"), bytes("c")])
            var damaged = try fileBytes(url)
            damaged[offsets[1] + 3] = 0x7F  // the length now reaches far past the end of the file
            try writeBytes(damaged, to: url)
            #expect(isCorruptRecord(logError { _ = try LogFile.open(at: url) }, at: offsets[1]))
        }
    }

    @Test func zeroFilledTailAfterTheSyncedPartEndsTheRecords() throws {
        try withTemporaryDirectory { directory in
            // A crash after the file grew (or was preallocated) but before the unsynced data reached
            // the disk leaves zeros: no record is there, nothing is cut, the next append goes there.
            let url = directory.appendingPathComponent("zeros.log")
            let offsets = try makeLog(at: url, [bytes("kept"), bytes("lost")])
            var damaged = try fileBytes(url)
            for i in offsets[1]..<damaged.count { damaged[i] = 0 }
            damaged += [UInt8](repeating: 0, count: 4096)
            try writeBytes(damaged, to: url)
            let (log, recovery) = try LogFile.open(at: url)
            #expect(recovery.records.map(\.payload) == [bytes("kept")])
            #expect(recovery.truncatedTail == nil)
            #expect(try fileBytes(url) == damaged, "nothing cut")
            #expect(try log.append(.changeSet, bytes("next")) == offsets[1])
            try log.close()
            #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("kept"), bytes("next")])
        }
    }

    // MARK: Limits and headers

    @Test func hugeLengthFieldIsATypedErrorWithoutAllocatingIt() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("huge.log")
            _ = try makeLog(at: url, [bytes("good")])
            // A well-formed record header claiming 4 GiB - 16 bytes of payload.
            var header = [UInt8](repeating: 0, count: 13)
            header.withUnsafeMutableBytes { out in
                out.storeBytes(of: UInt32(0xFFFF_FFF0).littleEndian, toByteOffset: 0, as: UInt32.self)
                out[8] = LogRecord.Kind.changeSet.rawValue
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: out[0..<9]))
                out.storeBytes(of: crc.littleEndian, toByteOffset: 9, as: UInt32.self)
            }
            try writeBytes(try fileBytes(url) + header + bytes("not 4 GiB"), to: url)
            let error = logError { _ = try LogFile.open(at: url) }
            #expect(isCorruptRecord(error, at: 33))
            #expect(error?.description.contains("exceeds the limit") == true)
        }
    }

    @Test func recordsOverTheSizeLimitAreRejected() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("limit.log")
            let (log, _) = try LogFile.open(at: url, maxRecordSize: 100)
            #expect(logError { _ = try log.append(.changeSet, [UInt8](repeating: 1, count: 101)) } == .recordTooLarge(101))
            #expect(logError { try log.compact(snapshot: [UInt8](repeating: 1, count: 101)) } == .recordTooLarge(101))
            #expect(try log.append(.changeSet, [UInt8](repeating: 1, count: 100)) == 16)
            try log.close()
            // A stored record longer than the reader's limit is reported, not read.
            #expect(isCorruptRecord(logError { _ = try LogFile.read(at: url, maxRecordSize: 99) }, at: 16))
        }
    }

    @Test func badHeadersAreTypedErrors() throws {
        try withTemporaryDirectory { directory in
            let notALog = directory.appendingPathComponent("notes.txt")
            let notes = bytes("these are someone's notes, not a log file")
            try writeBytes(notes, to: notALog)
            #expect(logError { _ = try LogFile.open(at: notALog) } == .badHeader(path: notALog.path))
            #expect(logError { _ = try LogFile.read(at: notALog) } == .badHeader(path: notALog.path))
            #expect(try fileBytes(notALog) == notes)

            let short = directory.appendingPathComponent("short.txt")
            try writeBytes(bytes("hi"), to: short)
            #expect(logError { _ = try LogFile.open(at: short) } == .badHeader(path: short.path))
            #expect(try fileBytes(short) == bytes("hi"))

            let future = directory.appendingPathComponent("future.log")
            var header = LogFormat.magic
            LogFormat.appendLE(2, to: &header)
            LogFormat.appendLE(CRC32C.checksum(header), to: &header)
            try writeBytes(header, to: future)
            #expect(logError { _ = try LogFile.open(at: future) } == .unsupportedVersion(path: future.path, version: 2))

            let missing = directory.appendingPathComponent("missing.log")
            #expect(logError { _ = try LogFile.read(at: missing) } == .io(path: missing.path, errno: ENOENT, operation: "open"))
            let noDirectory = directory.appendingPathComponent("nope/x.log")
            #expect(logError { _ = try LogFile.open(at: noDirectory) } == .io(path: noDirectory.path, errno: ENOENT, operation: "open"))
        }
    }

    @Test func emptyOrHalfCreatedFilesGetAFreshHeader() throws {
        try withTemporaryDirectory { directory in
            let cases: [(String, [UInt8])] = [("empty.log", []), ("prefix.log", Array(LogFormat.fileHeader.prefix(7))),
                                               ("zeros.log", [UInt8](repeating: 0, count: 16))]
            for (name, content) in cases {
                let url = directory.appendingPathComponent(name)
                try writeBytes(content, to: url)
                let (log, recovery) = try LogFile.open(at: url)
                #expect(recovery.records.isEmpty && recovery.truncatedTail == nil)
                try log.append(.changeSet, bytes("x"))
                try log.close()
                #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("x")], "\(name)")
            }
        }
    }

    // MARK: Compaction

    @Test func compactionKeepsSnapshotAndTail() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("compact.log")
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            for i in 0..<100 { try log.append(.changeSet, bytes("old change \(i)")) }
            try log.flush()
            let before = log.size
            try log.compact(snapshot: bytes("STATE"), keeping: [(.changeSet, bytes("t1")), (.changeSet, bytes("t2"))])
            // Header, snapshot, two tail records, and the sync marker that says all of it is synced.
            #expect(log.size == 16 + 18 + 15 + 15 + 21)
            #expect(log.size < before)
            #expect(try log.append(.changeSet, bytes("after")) == 85)
            try log.close()
            let (reopened, recovery) = try LogFile.open(at: url)
            #expect(recovery == LogRecovery(records: [
                LogRecord(kind: .snapshot, payload: bytes("STATE"), offset: 16),
                LogRecord(kind: .changeSet, payload: bytes("t1"), offset: 34),
                LogRecord(kind: .changeSet, payload: bytes("t2"), offset: 49),
                LogRecord(kind: .changeSet, payload: bytes("after"), offset: 85),
            ], truncatedTail: nil))
            try reopened.close()
            // The replaced log is kept as the previous generation; the side file records the synced length.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["compact.log", "compact.log.previous", "compact.log.synced"])
            #expect(try LogFile.read(at: LogFile.previousGenerationURL(of: url)).records.count == 100)
        }
    }

    @Test func compactionDropsBufferedRecordsAndKeepsTheLock() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("buffered.log")
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            try log.append(.changeSet, bytes("buffered, superseded by the snapshot"))
            try log.compact(snapshot: bytes("S"))
            #expect(logError { _ = try LogFile.open(at: url) } == .locked(path: url.path))
            try log.close()
            #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("S")])
        }
    }

    @Test func leftoverCompactionTempFileIsIgnoredAndRemoved() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("crashed.log")
            _ = try makeLog(at: url, [bytes("a"), bytes("b")])
            // As if a compaction crashed before its rename: a half-written temp file next to the log.
            let temp = directory.appendingPathComponent("crashed.log.compact-tmp")
            try writeBytes(LogFormat.fileHeader + bytes("half a snap"), to: temp)
            let (log, recovery) = try LogFile.open(at: url)
            #expect(recovery.records.map(\.payload) == [bytes("a"), bytes("b")])
            #expect(!FileManager.default.fileExists(atPath: temp.path))
            try log.compact(snapshot: bytes("snap"))
            try log.close()
            #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("snap")])
        }
    }

    // MARK: Sync policies, locking, errors

    @Test(arguments: [FsyncPolicy.never, .everyRecord, .interval(.zero), .interval(.seconds(3600))])
    func fsyncPolicies(policy: FsyncPolicy) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("policy.log")
            let (log, _) = try LogFile.open(at: url, fsync: policy)
            for i in 0..<50 { try log.append(.changeSet, bytes("record \(i)")) }
            let onDisk = try LogFile.read(at: url).records.count
            if policy == .everyRecord || policy == .interval(.zero) {
                #expect(onDisk == 50)  // written (and synced) as appended
                #expect(try log.syncIfDue() == false)  // nothing pending
            } else {
                #expect(onDisk == 0)  // still in the append buffer
                #expect(try log.syncIfDue() == false)  // .never: never; otherwise an hour has not passed
                try log.flush()
                #expect(try LogFile.read(at: url).records.count == 50)
            }
            try log.append(.changeSet, bytes("last"))
            try log.sync()
            #expect(try LogFile.read(at: url).records.count == 51)
            try log.append(.changeSet, bytes("closing"))
            try log.close()
            #expect(try LogFile.read(at: url).records.count == 52)
        }
    }

    @Test func syncIfDueSyncsPendingRecordsOnceTheIntervalHasPassed() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("due.log")
            let (log, _) = try LogFile.open(at: url, fsync: .interval(.zero), bufferCapacity: 1 << 16)
            #expect(try log.syncIfDue() == false)  // nothing pending
            try log.append(.changeSet, bytes("synced on append: the interval is zero"))
            #expect(try LogFile.read(at: url).records.count == 1)
            try log.close()
        }
    }

    @Test func unbufferedAppendsAreWrittenImmediately() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("unbuffered.log")
            let (log, _) = try LogFile.open(at: url, fsync: .never, bufferCapacity: 0)
            try log.append(.changeSet, bytes("now"))
            #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("now")])
            try log.close()
        }
    }

    @Test func secondWriterIsLockedOutAndClosedLogsRefuseWork() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("lock.log")
            let (log, _) = try LogFile.open(at: url)
            #expect(logError { _ = try LogFile.open(at: url) } == .locked(path: url.path))
            try log.close()
            try log.close()  // idempotent
            #expect(logError { _ = try log.append(.changeSet, bytes("late")) } == .unusable(path: url.path, reason: "it was closed"))
            let (again, _) = try LogFile.open(at: url)
            try again.close()
        }
    }

    @Test func diskFullIsReportedAndTheBufferKept() throws {
        #expect(LogFileError.system(ENOSPC, "write", "/x") == .diskFull(path: "/x"))
        #expect(LogFileError.system(EDQUOT, "write", "/x") == .diskFull(path: "/x"))
        #expect(LogFileError.system(EIO, "write", "/x") == .io(path: "/x", errno: EIO, operation: "write"))
        // /dev/full fails every write with ENOSPC.
        let fd = LogWriter.openFile("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { LogWriter.closeFile(fd) }
        let writer = LogWriter(fd: fd, path: "/dev/full", writtenEnd: 0, bufferCapacity: 1024)
        try LogWriter.withBytes(bytes("pending")) { (payload) throws(LogFileError) in
            try writer.append(kind: 2, payload: payload)
        }
        #expect(logError { try writer.flush() } == .diskFull(path: "/dev/full"))
        #expect(writer.buffered == 20 && writer.writtenEnd == 0)  // kept for a retry
    }

    // MARK: Preallocation

    /// Appends `payloads` to a log preallocated in 64 KiB chunks (syncing after the first
    /// `syncFirst`), and returns the file's bytes and its synced-length side file as a crash would
    /// leave them (taken while the log is open: a zeroed tail after the records), the records'
    /// offsets and where they end. The log is closed afterwards.
    private func preallocatedLog(at url: URL, _ payloads: [[UInt8]], syncFirst: Int? = nil) throws -> (crashed: [UInt8], offsets: [Int], end: Int) {
        let (log, _) = try LogFile.open(at: url, fsync: .never, preallocation: 64 << 10)
        var offsets: [Int] = []
        for (index, payload) in payloads.enumerated() {
            offsets.append(try log.append(.changeSet, payload))
            if index + 1 == syncFirst { try log.sync() }
        }
        try log.flush()
        let crashed = try fileBytes(url)
        let sidePath = url.path + ".synced"
        let side = FileManager.default.contents(atPath: sidePath)
        let end = log.size
        try log.close()
        // The side file as it was at the crash (the close recorded a longer synced length).
        if let side { try side.write(to: URL(fileURLWithPath: sidePath)) } else { try? FileManager.default.removeItem(atPath: sidePath) }
        return (crashed, offsets, end)
    }

    @Test func appendsToAPreallocatedLogNeverGrowTheFileAndCloseTrimsIt() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("pre.log")
            let payloads = (0..<50).map { bytes("record \($0) " + String(repeating: "x", count: $0 * 37)) }
            let (crashed, offsets, end) = try preallocatedLog(at: url, payloads)
            // While open: one 64 KiB chunk holds them all, zeros after the records.
            #expect(crashed.count == 64 << 10)
            #expect(end < crashed.count && crashed[end...].allSatisfy { $0 == 0 })
            // Closed: trimmed to the records (and the closing sync marker).
            #expect(try fileBytes(url).count < crashed.count)
            #expect(try LogFile.read(at: url).records.map(\.payload) == payloads)
            // Opened as a crash leaves it: every record, no torn tail, the file left as it is, and the
            // next append lands right after the last record, inside the preallocated part.
            try writeBytes(crashed, to: url)
            let (log, recovery) = try LogFile.open(at: url, fsync: .never, preallocation: 64 << 10)
            #expect(recovery.records.map(\.payload) == payloads && recovery.records.map(\.offset) == offsets)
            #expect(recovery.truncatedTail == nil)
            #expect(try fileBytes(url).count == 64 << 10)
            #expect(try log.append(.changeSet, bytes("after the crash")) == end)
            try log.close()
            #expect(try LogFile.read(at: url).records.map(\.payload) == payloads + [bytes("after the crash")])
            #expect(try LogFile.read(at: url).truncatedTail == nil)
        }
    }

    @Test func aZeroedTailThatWasSyncedIsDamageAndAShortZeroRunStaysATornTail() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("synced.log")
            let payloads = (0..<20).map { bytes("record \($0)") }
            // Synced after 10 records (a marker names that length): zeros from record 5 on lost synced records.
            let (crashed, offsets, _) = try preallocatedLog(at: url, payloads, syncFirst: 10)
            var zeroed = crashed
            for index in offsets[5]..<zeroed.count { zeroed[index] = 0 }
            try writeBytes(zeroed, to: url)
            let error = logError { _ = try LogFile.read(at: url) }
            #expect(isCorruptRecord(error, at: offsets[5]), "\(String(describing: error))")
            #expect(logError { _ = try LogFile.open(at: url, fsync: .never) } != nil)
            #expect(try fileBytes(url) == zeroed, "the damaged file is left as it was")
            // Zeros only after the synced part: the unsynced records are simply not there (a crash
            // before their write reached the disk), nothing is damaged.
            var unsynced = crashed
            for index in offsets[15]..<unsynced.count { unsynced[index] = 0 }
            try writeBytes(unsynced, to: url)
            let recovery = try LogFile.read(at: url)
            #expect(recovery.records.map(\.payload) == Array(payloads[..<15]) && recovery.truncatedTail == nil)
            // Fewer zeros than a record header after the last record: possibly the start of a cut
            // record, a torn tail as without preallocation.
            let short = Array(crashed[..<offsets[19]]) + [0, 0, 0, 0, 0]
            try writeBytes(short, to: url)
            #expect(try LogFile.read(at: url).truncatedTail?.offset == offsets[19])
        }
    }

    /// A sync made on another thread (`syncPoint`, `sync`, `didSync`) owes a sync marker, which
    /// goes out in front of the next small record, in the same write: that thread never writes.
    @Test func aMarkerOwedByAnotherThreadsSyncGoesOutWithTheNextAppend() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("owed.log")
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            let first = try log.append(.changeSet, bytes("first"))
            let firstEnd = log.size
            // Control: no sync, no marker: the next record follows right after.
            #expect(try log.append(.changeSet, bytes("second")) == firstEnd)
            let point = try log.syncPoint()
            try LogFile.sync(point)
            log.didSync(point)
            #expect(log.size == point.end, "the syncing thread wrote nothing")
            #expect(try fileBytes(url).count == point.end)
            let third = try log.append(.changeSet, bytes("third"))
            #expect(third == point.end + LogFormat.recordHeaderSize + LogFormat.syncMarkerPayloadSize, "the marker went in front of it")
            // The marker names the synced length (read without the side file).
            try log.flush()
            let raw = try fileBytes(url)
            let marker = Array(raw[point.end..<point.end + 13]).withUnsafeBytes { LogFormat.RecordHeader($0) }
            #expect(marker.isIntact && marker.kind == LogFormat.syncMarkerKind && marker.length == LogFormat.syncMarkerPayloadSize)
            let named = Array(raw[(point.end + 13)..<(point.end + 21)]).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            #expect(UInt64(littleEndian: named) == UInt64(point.end))
            // A record larger than the append buffer is written on its own: an owed marker waits.
            let point2 = try log.syncPoint()
            try LogFile.sync(point2)
            log.didSync(point2)
            let large = [UInt8](repeating: 0x41, count: LogFile.defaultBufferCapacity + 1)
            #expect(try log.append(.changeSet, large) == point2.end)
            // … and `writePendingSyncMarker` writes it without a record.
            let end = log.size
            log.writePendingSyncMarker()
            #expect(log.size == end + LogFormat.recordHeaderSize + LogFormat.syncMarkerPayloadSize)
            log.writePendingSyncMarker()
            #expect(log.size == end + LogFormat.recordHeaderSize + LogFormat.syncMarkerPayloadSize, "owed once, written once")
            try log.close()
            try FileManager.default.removeItem(atPath: url.path + ".synced")
            #expect(try LogFile.read(at: url).records.map(\.payload) == [bytes("first"), bytes("second"), bytes("third"), large])
            #expect(try LogFile.read(at: url).records.first?.offset == first)
            let fd = open(url.path, O_RDONLY)
            defer { close(fd) }
            let reader = LogReader(fd: fd, path: url.path, fileSize: try fileBytes(url).count, maxRecordSize: LogFile.defaultMaxRecordSize)
            #expect(try reader.scan(from: LogFormat.fileHeaderSize) { _, _, _ in }.syncedEnd == point2.end)
        }
    }

    @Test func errorsDescribeThemselves() {
        #expect(LogFileError.corruptRecord(offset: 42, reason: "payload checksum mismatch").description
            == "corrupt log record at offset 42: payload checksum mismatch")
        #expect(LogFileError.diskFull(path: "/x").description.contains("no space"))
        #expect(LogFileError.io(path: "/x", errno: ENOENT, operation: "open").description.contains("No such file"))
        #expect(TornTail(offset: 3, discardedBytes: 1, reason: "r").description == "torn tail at offset 3: 1 byte discarded (r)")
    }
}
