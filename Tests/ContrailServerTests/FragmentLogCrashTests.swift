import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// Offline edits survive real crashes: `contrail test-client` edits a logged scope offline and is
/// SIGKILLed at random points, again and again on the same log; then the log is restored here and
/// synced with a server, which must end with every change set the log holds, as made.
@MainActor
@Suite(.serialized) struct FragmentLogCrashTests {
    /// The `contrail` executable next to the test bundle (`swift build --build-tests` builds it).
    static func contrailBinary() throws -> URL {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appending(path: ".build/debug"))
        for directory in candidates {
            let binary = directory.appending(path: "contrail")
            if FileManager.default.isExecutableFile(atPath: binary.path(percentEncoded: false)) { return binary }
        }
        throw TestFailure("no contrail executable near the tests (looked in \(candidates.map(\.path)))")
    }

    /// One run of `contrail test-client`: what it printed, parsed.
    struct Round {
        var restored: JSON?
        /// The `restored` line's STATE as printed (for digests).
        var restoredText: String?
        /// With `--burst`: every `state K #DIGEST` line, by K.
        var digests: [Int: String] = [:]
        /// Every `state K` line, by K.
        var states: [Int: JSON] = [:]
        var lastPrinted = 0
        var lastDurable = 0
        /// Whether the restore cut off a torn record (a kill in the middle of a write).
        var cutTornTail = false
        /// Where the cut-off torn record started.
        var tornOffset: Int?
        /// With ``Kill/whileWriting(afterDurable:)``: where the log's records ended just before the
        /// write the kill interrupted (the `durable K END` line's END).
        var sizeBeforeKill: Int?
    }

    /// When `runChild` kills the child.
    enum Kill {
        /// After it printed this many states, plus a random moment (for odd counts).
        case afterStates(Int)
        /// After it printed this many `durable` lines, as soon as the bytes after the log's records
        /// (zeros: the log preallocates its file) are seen changing: in the middle of writing the next record.
        case whileWriting(afterDurable: Int)
        /// Never: the child only restores and exits.
        case never
    }

    /// Whether the file at `url` has a byte other than zero in the record header's worth of bytes
    /// at `offset` (true too when it cannot be read).
    nonisolated static func written(_ url: URL, at offset: Int) -> Bool {
        let fd = open(url.path(percentEncoded: false), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 13)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 13, off_t(offset)) }
        return count < 0 || bytes.contains { $0 != 0 }
    }

    /// The END of the last `durable K END` line of `text` (the log's records end there).
    nonisolated static func lastDurableEnd(in text: String) -> Int? {
        text.split(separator: "\n").last { $0.hasPrefix("durable ") }.flatMap { line in
            line.split(separator: " ").dropFirst(2).first.flatMap { Int($0) }
        }
    }

    /// Runs the child, SIGKILLs it as `kill` says, and returns what it printed.
    static func runChild(_ binary: URL, log: URL, seed: UInt64, kill killPoint: Kill, arguments extra: [String] = []) async throws -> Round {
        let only = if case .never = killPoint { ["--count", "0"] } else { [String]() }
        let child = try ChildProcess(binary, ["test-client", "--log", log.path(percentEncoded: false), "--seed", "\(seed)"] + only + extra)
        var sizeBeforeKill: Int?
        let printedEnough: Bool
        switch killPoint {
        case .afterStates(let count):
            printedEnough = await child.waitForOutput(timeout: .seconds(120)) { lines(in: $0, startingWith: "state ") >= count }
            // A random moment within the next change set or so (its encoding, write or sync).
            try? await Task.sleep(for: .microseconds(Int.random(in: 0...20_000) * (count % 2)))
        case .whileWriting(let count):
            printedEnough = await child.waitForOutput(timeout: .seconds(120)) { lines(in: $0, startingWith: "durable ") >= count }
            // Watch the file (bounded) on a thread of its own, never the main actor, and kill the
            // child from there: the first bytes after the records are the next record being written.
            let size = lastDurableEnd(in: child.text) ?? Int.max
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    let deadline = ContinuousClock.now + .seconds(60)
                    while child.isRunning, !written(log, at: size), ContinuousClock.now < deadline { usleep(20) }
                    child.signal(SIGKILL)
                    done.resume()
                }.start()
            }
            sizeBeforeKill = size
        case .never:
            printedEnough = await child.waitForExit(timeout: .seconds(120))
        }
        let killed: Bool
        if case .never = killPoint { killed = false } else { killed = true }
        if killed || !printedEnough { child.signal(SIGKILL) }
        #expect(await child.waitForExit(), "the child exited")
        let readAll = await child.waitForOutputToEnd()
        #expect(readAll, "the child's output reached its end")
        let text = child.text
        #expect(printedEnough, "the child printed \(lines(in: text, startingWith: "state ")) states in time")
        if killed {
            #expect(child.termination == .signalled(SIGKILL), "the child died of SIGKILL, not on its own: \(text.suffix(300))")
        } else {
            #expect(child.termination == .exited(0), "the child restored and exited: \(text.suffix(300))")
        }
        var round = Round()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            switch parts.first {
            case "restored":
                round.restoredText = String(line.dropFirst("restored ".count))
                round.restored = try JSON(parsing: String(line.dropFirst("restored ".count)))
            case "state" where parts.count == 3 && parts[2].hasPrefix("#"):
                let step = Int(parts[1]) ?? -1
                round.digests[step] = String(parts[2].dropFirst())
                round.lastPrinted = max(round.lastPrinted, step)
            case "state" where parts.count == 3:
                let step = Int(parts[1]) ?? -1
                round.states[step] = try JSON(parsing: String(parts[2]))
                round.lastPrinted = max(round.lastPrinted, step)
            case "torn":
                round.cutTornTail = true
                round.tornOffset = parts.count > 1 ? Int(parts[1]) : nil
            case "durable" where parts.count >= 2: round.lastDurable = max(round.lastDurable, Int(parts[1]) ?? 0)
            default: break
            }
        }
        round.sizeBeforeKill = sizeBeforeKill
        return round
    }

    static func step(of state: JSON) -> Int {
        guard let root = state["root"]?.stringValue else { return -1 }
        return Int(state["objects"]?[root]?["properties"]?["step"]?.int64Value ?? -1)
    }

    /// What a restart after `previous` may show: at least everything announced durable, exactly
    /// a state the app printed, or one change set made but not yet printed when the kill came.
    /// With `--burst` (the round printed digests) every printed state, that is every `modify`
    /// that returned, must be restored: nothing but a change set still being made may be missing.
    static func checkRestore(_ restored: JSON, text: String? = nil, after previous: Round, startState: JSON) {
        let step = step(of: restored)
        let startStep = Self.step(of: startState)
        #expect(step >= previous.lastDurable, "restored step \(step) lost durable change sets up to \(previous.lastDurable)")
        if !previous.digests.isEmpty {
            #expect(step >= previous.lastPrinted, "restored step \(step) lost change sets whose modify had returned, up to \(previous.lastPrinted)")
        }
        if step == startStep {
            #expect(restored == startState, "restored the start state exactly")
        } else if let digest = previous.digests[step] {
            #expect(text.map(Self.digest) == digest, "restored state at step \(step) is the one the app made")
        } else if let printed = previous.states[step] {
            #expect(restored == printed, "restored state at step \(step) is the one the app made")
        } else {
            #expect(step == max(previous.lastPrinted, startStep) + 1, "restored step \(step): at most one change set after the last printed \(previous.lastPrinted)")
        }
    }

    /// `contrail test-client`'s digest of a printed state: 64-bit FNV-1a of its UTF-8, 16 hex digits.
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// A server that knows the shelf and its collections, and a log at `logURL` that says so;
    /// returns the shelf's state.
    static func startOnline(_ server: ContrailServer, logURL: URL) async throws -> JSON {
        let scope = Scope(name: "Shelf")
        let shelf = Shelf()
        scope.root = shelf
        let log = FragmentLog(url: logURL)
        try log.attach(to: scope)
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        for index in 0..<3 {
            let item = Item()
            item.label = "online \(index)"
            shelf.left.append(item)
        }
        shelf.right.append(Item())
        #expect(await eventually { client.session?.pendingChangeSets == 0 })
        let state = scope.stateJSON()
        await client.close()
        try log.close()
        return state
    }

    /// What both crash tests start from: the `contrail` binary, a fresh log path (removed afterwards),
    /// a server (stopped afterwards, also when `body` throws), and a first online start that made
    /// the shelf known (`startOnline`'s state).
    static func withOnlineShelf(_ body: (_ binary: URL, _ logURL: URL, _ server: ContrailServer, _ startState: JSON) async throws -> Void) async throws {
        let binary = try contrailBinary()
        ModelRegistry.register(Shelf.self)
        let logURL = FileManager.default.temporaryDirectory.appending(path: "contrail-crash-\(UUID().uuidString).log")
        defer {
            for suffix in ["", ".previous", ".synced"] { try? FileManager.default.removeItem(atPath: logURL.path(percentEncoded: false) + suffix) }
        }
        let server = try makeServer()
        do {
            try await body(binary, logURL, server, try await startOnline(server, logURL: logURL))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func makeServer() throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.log = nil
        return try ContrailServer(options: options)
    }

    /// One more restart that only restores, then the last one here: every offline change set is
    /// pending, restored as made, and sent; the server ends with all of them and a fresh replica
    /// fetches that state. Returns the number of change sets. `settleWithin` bounds the wait for the
    /// server to take them all: CI under ThreadSanitizer once had 97 of 315 still on their way at 60 s.
    @discardableResult
    static func finish(_ server: ContrailServer, binary: URL, logURL: URL, seed: UInt64, after previous: Round, startState: JSON,
                       settleWithin: Duration = .seconds(300)) async throws -> Int {
        let last = try await runChild(binary, log: logURL, seed: seed, kill: .never)
        let lastRestored = try #require(last.restored)
        checkRestore(lastRestored, text: last.restoredText, after: previous, startState: startState)
        let scope = Scope(name: "Shelf")
        let log = FragmentLog(url: logURL)
        let report = try log.attach(to: scope)
        let restored = scope.stateJSON()
        let made = step(of: restored)
        #expect(made == step(of: lastRestored))
        #expect(report.pendingChangeSets == made, "one pending change set per offline step")
        // The history keeps the last `historyLimit` change sets: past it, the report's count says it.
        let pending = scope.history.filter { $0.origin == .local && $0.state == .syncing }
        if made <= scope.historyLimit { #expect(pending.count == made) }
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        #expect(await eventually(settleWithin) { client.session?.pendingChangeSets == 0 }, "seed \(seed)")
        #expect(pending.allSatisfy { $0.state == .completed }, "no restored change set was rejected (seed \(seed)): \(pending.map(\.state))")
        #expect(scope.stateJSON() == restored, "syncing changed nothing locally")

        // A fresh replica fetches exactly that state: the server holds every change, and the scope is fetchable.
        let fresh = Scope(name: "Shelf")
        fresh.root = Shelf()
        let observer = try await Client.sync(fresh, connector: server.connector(), options: testOptions())
        #expect(await eventually(.seconds(30)) { fresh.stateJSON() == restored }, "the server holds every offline change (seed \(seed))")
        await observer.close()
        await client.close()
        try log.close()
        // Settled: a further restart has nothing left to send.
        let again = Scope(name: "Shelf")
        let reopened = FragmentLog(url: logURL)
        #expect(try reopened.attach(to: again).pendingChangeSets == 0)
        try reopened.close()
        return made
    }

    @Test func offlineChangeSetsSurviveRepeatedSIGKILLsAndReachTheServerAsMade() async throws {
        try await Self.withOnlineShelf { binary, logURL, server, firstState in
            var startState = firstState

            // Offline, killed again and again on the same log.
            let seed = UInt64.random(in: 1...1_000_000)
            var random = SystemRandomNumberGenerator()
            var previous = Round()
            var rounds = 0
            var tornTails = 0
            while rounds < 10 || Self.step(of: startState) < 24 {
                rounds += 1
                try #require(rounds <= 20, "enough change sets within 20 rounds")
                let round = try await Self.runChild(binary, log: logURL, seed: seed &+ UInt64(rounds), kill: .afterStates(Int.random(in: 1...8, using: &random)))
                let restored = try #require(round.restored, "round \(rounds) (seed \(seed)) restored")
                Self.checkRestore(restored, after: previous, startState: startState)
                previous = round
                startState = restored
                if round.cutTornTail { tornTails += 1 }
            }
            print("crash test (seed \(seed)): \(rounds) SIGKILLs, \(Self.step(of: startState)) change sets restored, \(tornTails) torn tails cut")
            let made = try await Self.finish(server, binary: binary, logURL: logURL, seed: seed, after: previous, startState: startState)
            #expect(made >= 20, "at least 20 offline change sets (seed \(seed))")
        }
    }

    /// Crash-consistent on return (issue 23): the child edits as fast as it can without waiting for
    /// the disk, prints each `modify` that returned, and is SIGKILLed at random points, again and
    /// again on the same log (with a small compaction threshold, so kills land in compactions too).
    /// Every printed edit is restored after every kill, and the server ends with all of them.
    @Test func everyEditWhoseModifyReturnedSurvivesASIGKILL() async throws {
        try await Self.withOnlineShelf { binary, logURL, _, firstState in
            var startState = firstState
            let seed = UInt64.random(in: 1...1_000_000)
            var random = SystemRandomNumberGenerator()
            var previous = Round()
            var (rounds, returned, lost) = (0, 0, 0)
            let started = ContinuousClock.now
            while rounds < 12 || (returned < 2000 && ContinuousClock.now < started + .seconds(45)) {
                rounds += 1
                try #require(rounds <= 200, "enough edits within 200 rounds")
                let round = try await Self.runChild(binary, log: logURL, seed: seed &+ UInt64(rounds), kill: .afterStates(Int.random(in: 1...400, using: &random)),
                                                    arguments: ["--burst", "--compact-bytes", "262144"])
                let restored = try #require(round.restored, "round \(rounds) (seed \(seed)) restored")
                Self.checkRestore(restored, text: round.restoredText, after: previous, startState: startState)
                lost += max(0, previous.lastPrinted - Self.step(of: restored))
                returned += max(0, round.lastPrinted - Self.step(of: restored))
                previous = round
                startState = restored
            }
            // One more start that only restores: the last kill's edits are all there too, and every
            // offline change set is pending (sent to a server by the other tests here).
            let last = try await Self.runChild(binary, log: logURL, seed: seed, kill: .never)
            let lastRestored = try #require(last.restored)
            Self.checkRestore(lastRestored, text: last.restoredText, after: previous, startState: startState)
            lost += max(0, previous.lastPrinted - Self.step(of: lastRestored))
            let scope = Scope(name: "Shelf")
            let log = FragmentLog(url: logURL)
            #expect(try log.attach(to: scope).pendingChangeSets == Self.step(of: lastRestored), "one pending change set per offline step")
            try log.close()
            print("crash test, bursts (seed \(seed)): \(rounds) SIGKILLs, \(returned) edits returned from modify before a kill, \(lost) lost, in \(ContinuousClock.now - started)")
            #expect(lost == 0)
            #expect(returned >= 1000, "at least 1,000 returned edits (seed \(seed))")
        }
    }

    /// A log a SIGKILL left keeps its preallocated, zeroed tail: it restores with no torn tail, and
    /// `contrail log verify` calls it clean; the same file with a damaged record is not.
    @Test func aKilledLogsPreallocatedTailIsCleanAndDamageIsNot() async throws {
        try await Self.withOnlineShelf { binary, logURL, _, _ in
            // Small edits (--burst): a kill does not land inside a record's one write.
            _ = try await Self.runChild(binary, log: logURL, seed: 7, kill: .afterStates(20), arguments: ["--burst"])
            let path = logURL.path(percentEncoded: false)
            let bytes = try [UInt8](Data(contentsOf: logURL))
            let records = try LogFile.read(at: logURL).records
            let end = try #require(records.last.map { $0.offset + 13 + $0.payload.count })
            #expect(bytes.count % LogFile.appendPreallocation == 0 && bytes.count > end, "preallocated: \(bytes.count) bytes, records end at \(end)")
            let verify = try ChildProcess(binary, ["log", "verify", path])
            #expect(await verify.waitForExit(timeout: .seconds(60)) && verify.termination == .exited(0), "verify: \(verify.text)")
            #expect(verify.text.contains("clean"))

            var damaged = bytes
            damaged[records[0].offset + 20] ^= 0x10  // inside the snapshot: damage, never a torn tail
            try Data(damaged).write(to: logURL)
            let refused = try ChildProcess(binary, ["log", "verify", path])
            #expect(await refused.waitForExit(timeout: .seconds(60)) && refused.termination == .exited(1), "verify: \(refused.text)")
            #expect(refused.text.contains("damaged at offset \(records[0].offset)"), "\(refused.text)")
        }
    }

    /// Thousands of pending change sets (their collections logged as edits, Protocol §8.24, and
    /// compacted along the way) survive SIGKILLs, and all of them settle on the server as made.
    @Test func thousandsOfPendingChangeSetsSurviveSIGKILLsAndAllSettle() async throws {
        try await Self.withOnlineShelf { binary, logURL, server, firstState in
            var startState = firstState
            let seed = UInt64.random(in: 1...1_000_000)
            var random = SystemRandomNumberGenerator()
            var previous = Round()
            var rounds = 0
            while Self.step(of: startState) < 2_000 {
                rounds += 1
                try #require(rounds <= 150, "2,000 edits within 150 rounds (seed \(seed))")
                let round = try await Self.runChild(binary, log: logURL, seed: seed &+ UInt64(rounds), kill: .afterStates(Int.random(in: 50...300, using: &random)),
                                                    arguments: ["--burst", "--compact-bytes", "1048576"])
                let restored = try #require(round.restored, "round \(rounds) (seed \(seed)) restored")
                Self.checkRestore(restored, text: round.restoredText, after: previous, startState: startState)
                #expect(previous.lastPrinted <= Self.step(of: restored), "nothing printed before the kill is lost (seed \(seed))")
                previous = round
                startState = restored
            }
            let made = try await Self.finish(server, binary: binary, logURL: logURL, seed: seed, after: previous, startState: startState)
            #expect(made >= 2_000)
        }
    }

    /// Kills that land in the middle of writing a large record: the next start cuts the torn
    /// record off exactly where the last intact one ended, reports it (typed, with its offset),
    /// restores every change set that was synced before, and the server ends with all of them.
    @Test func killsInTheMiddleOfAWriteCutATornTailAndLoseNothingSynced() async throws {
        try await Self.withOnlineShelf { binary, logURL, server, firstState in
            var startState = firstState

            let seed = UInt64.random(in: 1...1_000_000)
            var previous = Round()
            var rounds = 0
            var tornTails = 0
            // Every change set carries a 2 MB title, so every record takes a while to write.
            while rounds < 4 || tornTails < 3 {
                rounds += 1
                try #require(rounds <= 12, "3 torn tails within 12 kills (seed \(seed)), got \(tornTails)")
                let round = try await Self.runChild(binary, log: logURL, seed: seed &+ UInt64(rounds),
                                                    kill: .whileWriting(afterDurable: Int.random(in: 1...2)), arguments: ["--title-bytes", "2000000"])
                let restored = try #require(round.restored, "round \(rounds) (seed \(seed)) restored")
                Self.checkRestore(restored, after: previous, startState: startState)
                if round.cutTornTail {
                    tornTails += 1
                    #expect(round.tornOffset == previous.sizeBeforeKill, "the torn record started where the last intact one ended")
                    #expect(Self.step(of: restored) == previous.lastDurable, "everything synced is back, the torn change set is not")
                }
                previous = round
                startState = restored
            }
            // The last kill's torn tail is cut by this restore.
            let made = try await Self.finish(server, binary: binary, logURL: logURL, seed: seed, after: previous, startState: startState)
            print("crash test, kills mid-write (seed \(seed)): \(rounds) SIGKILLs, \(tornTails) torn tails cut, \(made) change sets reached the server")
        }
    }
}

/// How many complete lines of `text` start with `prefix`.
func lines(in text: String, startingWith prefix: String) -> Int {
    text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1)
        .filter { $0.hasPrefix(prefix) }.count
}
