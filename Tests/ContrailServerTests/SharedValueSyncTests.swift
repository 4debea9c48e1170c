import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// A model with the shared property types of Protocol §8.21.
final class Memo: ModelObject {
    @Property var body = SharedText()
    @Property var likes = SharedCounter()
    @Property var title = ""
}

/// Watches a shared text's changes.
@MainActor final class TextWatcher {
    var changes: [TextChange] = []
    var remote = 0
}

/// `SharedText` and `SharedCounter` end to end: Contrail clients through a real `ContrailServer`,
/// offline and online, restarts through the fragment log, an original Jetstream peer's plain
/// writes, undo and redo, and two clients typing over WebSockets.
@MainActor
@Suite struct SharedValueSyncTests {
    let clock = TestClock()

    func makeServer(directory: URL? = nil) throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.dataDirectory = directory
        options.log = nil
        return try ContrailServer(options: options)
    }

    func replica(_ connector: any SyncConnector, log: FragmentLog? = nil) async throws -> (Client, Scope, Memo) {
        let scope = Scope(name: "Memo")
        if let log { try log.attach(to: scope) }
        if scope.root == nil { scope.root = Memo() }
        let memo = try #require(scope.root as? Memo)
        let client = try await Client.sync(scope, connector: connector, options: testOptions(clock: clock))
        return (client, scope, memo)
    }

    func converge(_ replicas: [(Client, Scope, Memo)], timeout: Duration = .seconds(90)) async -> Bool {
        await eventually(timeout) {
            clock.endPendingBackoff()
            return replicas.allSatisfy { ($0.0.session?.pendingChangeSets ?? 1) == 0 }
                && Set(replicas.map { $0.2.body.text }).count == 1 && Set(replicas.map { $0.2.likes.value }).count == 1
        }
    }

    @Test func concurrentIncrementsAllCountAndAPlainWriteSetsTheTotal() async throws {
        let server = try makeServer()
        let offline = SwitchableConnector(server.connector())
        let a = try await replica(offline)
        let b = try await replica(server.connector())
        await offline.cut()
        for _ in 0..<5 { a.2.likes.increment(); await ChangeDelivery.main.drain() }
        for _ in 0..<3 { b.2.likes.increment(); await ChangeDelivery.main.drain() }
        b.2.likes.add(-1)
        await ChangeDelivery.main.drain()
        offline.restore()
        #expect(await converge([a, b]))
        #expect(a.2.likes.value == 7 && b.2.likes.value == 7, "5 + 3 - 1: every increment counts (a plain Int would keep one side's)")
        // An original Jetstream peer writes the plain total: it sets it.
        let peer = ServerTestClient(server: server)
        try await peer.createSession()
        let (_, fetched) = try await peer.fetch("Memo", index: 1)
        let root = try #require(fetched["rootUUID"]?.stringValue)
        let fragments = try #require(fetched["fragments"]?.arrayValue)
        #expect(fragments.first?["properties"]?["likes"] == .int(7), "the original peer reads a plain integer")
        _ = try await peer.sync(index: 2, fragments: [Wire.fragment("change", root, "Memo", ["likes": .int(100)])])
        #expect(await eventually(.seconds(60)) { a.2.likes.value == 100 && b.2.likes.value == 100 })
        a.2.likes.increment()
        #expect(await converge([a, b]))
        #expect(b.2.likes.value == 101, "later increments add to what the plain write set")
        // Undo of an increment subtracts it, through the same mechanism.
        a.1.undo()
        #expect(await converge([a, b]))
        #expect(b.2.likes.value == 100)
        await a.0.close(); await b.0.close(); await server.stop()
    }

    @Test func concurrentTypingMergesWithoutLosingAKeystrokeAndObserversGetRanges() async throws {
        let server = try makeServer()
        let cutA = SwitchableConnector(server.connector())
        let cutB = SwitchableConnector(server.connector())
        let a = try await replica(cutA)
        let b = try await replica(cutB)
        let watcher = TextWatcher()
        b.2.body.observe(watcher) { changes, isRemote in
            watcher.changes += changes
            if isRemote { watcher.remote += 1 }
        }
        try a.2.body.insert("shared ", at: 0)
        #expect(await converge([a, b]))
        #expect(watcher.changes == [.insert(position: 0, text: "shared ")] && watcher.remote == 1)
        // Both offline, typing at the same spot and deleting around it.
        await cutA.cut()
        await cutB.cut()
        for character in "alpha" {
            try a.2.body.insert(String(character), at: a.2.body.count)
            await ChangeDelivery.main.drain()
        }
        for character in "bravo" {
            try b.2.body.insert(String(character), at: b.2.body.count)
            await ChangeDelivery.main.drain()
        }
        try b.2.body.delete(0..<1)
        await ChangeDelivery.main.drain()
        cutA.restore()
        cutB.restore()
        #expect(await converge([a, b]))
        let text = a.2.body.text
        #expect(text == "hared alphabravo" || text == "hared bravoalpha", "got \(text)")
        #expect(await server.state(ofScope: "Memo")?["objects"]?[a.2.uuid.uuidString.lowercased()]?["properties"]?["body"] == .string(text),
                "the server holds the plain text an original peer reads")
        // A third replica fetches the whole state.
        let c = try await replica(server.connector())
        #expect(c.2.body.text == text)
        try c.2.body.insert("!", at: c.2.body.count)
        #expect(await converge([a, b, c]))
        await a.0.close(); await b.0.close(); await c.0.close(); await server.stop()
    }

    @Test func undoAndRedoOfATextEditSync() async throws {
        let server = try makeServer()
        let a = try await replica(server.connector())
        let b = try await replica(server.connector())
        a.1.modify { try? a.2.body.insert("hello world", at: 0) }
        #expect(await converge([a, b]))
        a.1.modify { try? a.2.body.delete(0..<6) }
        #expect(await converge([a, b]))
        #expect(b.2.body.text == "world")
        try b.2.body.insert("big ", at: 0)
        #expect(await converge([a, b]))
        a.1.undo()  // types "hello " again where it was: after b's "big ", which b typed in front of the deleted text
        #expect(await converge([a, b]))
        #expect(b.2.body.text == "big hello world")
        a.1.redo()
        #expect(await converge([a, b]))
        #expect(b.2.body.text == "big world")
        a.1.undo()
        #expect(await converge([a, b]))
        #expect(b.2.body.text == "big hello world", "undo again after redo")
        await a.0.close(); await b.0.close(); await server.stop()
    }

    /// An undo of one change set that typed characters and deleted some of them takes away what it
    /// typed and does not type the deleted ones again (they were never there before it); redo
    /// brings back what it left. Control: the same edits as two change sets, undone one by one.
    @Test(arguments: [true, false])
    func undoOfAnEditThatDeletedWhatItTypedLeavesNothing(oneChangeSet: Bool) throws {
        let scope = Scope(name: "Memo")
        let memo = Memo()
        scope.root = memo
        if oneChangeSet {
            scope.modify { try? memo.body.insert("abc", at: 0); try? memo.body.delete(1..<2) }
        } else {
            scope.modify { try? memo.body.insert("abc", at: 0) }
            scope.modify { try? memo.body.delete(1..<2) }
        }
        #expect(memo.body.text == "ac")
        scope.undo()
        if !oneChangeSet {
            #expect(memo.body.text == "abc")
            scope.undo()
        }
        #expect(memo.body.text == "")
        scope.redo()
        #expect(memo.body.text == (oneChangeSet ? "ac" : "abc"))
        scope.undo()
        #expect(memo.body.text == "")
    }

    /// Undo walks back through every text a run of random change sets of typing and deleting left,
    /// and redo forward again, on 300 seeded histories (one replica: each step's text is exact).
    @Test func undoAndRedoOfRandomTextEditsRetraceEveryStep() {
        for seed in 1...300 {
            var random = SplitMix64(seed: UInt64(seed))
            let scope = Scope(name: "Memo")
            let memo = Memo()
            scope.root = memo
            var texts = [memo.body.text]
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                scope.modify {
                    for _ in 0..<Int.random(in: 1...4, using: &random) {
                        let count = memo.body.count
                        if count > 0, Bool.random(using: &random) {
                            let start = Int.random(in: 0..<count, using: &random)
                            try? memo.body.delete(start..<min(count, start + Int.random(in: 1...4, using: &random)))
                        } else {
                            let letters = String((0..<Int.random(in: 1...4, using: &random)).map { _ in "abcdefgh".randomElement(using: &random)! })
                            try? memo.body.insert(letters, at: Int.random(in: 0...count, using: &random))
                        }
                    }
                }
                texts.append(memo.body.text)
            }
            // An undo that changes nothing (a change set that deleted all it typed) records nothing
            // and leaves nothing to redo.
            var redoable: [String] = []
            for step in texts.indices.dropFirst().reversed() {
                let undone = scope.undo()
                #expect(memo.body.text == texts[step - 1], "seed \(seed), undo of step \(step)")
                if undone != nil { redoable.insert(texts[step], at: 0) }
            }
            for expected in redoable {
                scope.redo()
                #expect(memo.body.text == expected, "seed \(seed), redo")
            }
        }
    }

    @Test func assigningANewSharedTextTypesItOverTheTextItHeld() async throws {
        let server = try makeServer()
        let a = try await replica(server.connector())
        let b = try await replica(server.connector())
        try a.2.body.insert("first draft", at: 0)
        #expect(await converge([a, b]))
        let held = a.2.body
        a.2.body = SharedText("final draft")
        #expect(await converge([a, b]))
        #expect(b.2.body.text == "final draft", "the assignment is not lost")
        #expect(a.2.body.text == "final draft" && held.text == "final draft", "the property keeps its text, now holding the new one")
        try b.2.body.insert("!", at: 11)
        #expect(await converge([a, b]))
        #expect(a.2.body.text == "final draft!")
        await a.0.close(); await b.0.close(); await server.stop()
    }

    @Test func offlineEditsSurviveARestartThroughTheFragmentLogAndTheServerLog() async throws {
        let logURL = FileManager.default.temporaryDirectory.appending(path: "contrail-text-\(UUID().uuidString).log")
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-text-data-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: logURL)
            try? FileManager.default.removeItem(at: directory)
        }
        var server = try makeServer(directory: directory)
        let observer = try await replica(server.connector())
        do {
            let switchable = SwitchableConnector(server.connector())
            let log = FragmentLog(url: logURL)
            let first = try await replica(switchable, log: log)
            try first.2.body.insert("before ", at: 0)
            first.2.likes.add(2)
            #expect(await converge([first, observer]))
            try log.compact()
            await switchable.cut()
            try first.2.body.insert("offline", at: 7)
            first.2.likes.add(3)
            await ChangeDelivery.main.drain()
            try observer.2.body.insert("online ", at: 0)
            observer.2.likes.add(10)
            await ChangeDelivery.main.drain()
            try log.close()
            await first.0.close()
        }
        // The server restarts from its data directory too.
        await observer.0.close()
        await server.stop()
        server = try makeServer(directory: directory)
        let log = FragmentLog(url: logURL)
        let second = try await replica(server.connector(), log: log)
        let watcher = try await replica(server.connector())
        #expect(await converge([second, watcher]))
        #expect(watcher.2.body.text == "online before offline", "got \(watcher.2.body.text)")
        #expect(watcher.2.likes.value == 15)
        try log.close()
        await second.0.close(); await watcher.0.close(); await server.stop()
    }

    @Test func anOriginalPeersPlainWriteOfATextIsMergedAsAReplacement() async throws {
        let server = try makeServer()
        let a = try await replica(server.connector())
        try a.2.body.insert("the quick fox", at: 0)
        #expect(await converge([a]))
        let peer = ServerTestClient(server: server)
        try await peer.createSession()
        let (_, fetched) = try await peer.fetch("Memo", index: 1)
        let root = try #require(fetched["rootUUID"]?.stringValue)
        #expect(fetched["fragments"]?[0]?["properties"]?["body"] == .string("the quick fox"))
        _ = try await peer.sync(index: 2, fragments: [Wire.fragment("change", root, "Memo", ["body": .string("the quick brown fox")])])
        #expect(await eventually(.seconds(60)) { a.2.body.text == "the quick brown fox" })
        let cursor = try a.2.body.cursor(at: 4)  // before "quick"
        try a.2.body.insert("very ", at: 4)
        #expect(a.2.body.position(of: cursor) == 9)
        #expect(await converge([a]))
        #expect(await server.state(ofScope: "Memo")?["objects"]?[root]?["properties"]?["body"] == .string("the very quick brown fox"))
        await a.0.close(); await server.stop()
    }

    /// Issue 27's end-to-end check: two clients type 5,000 characters each into one text over
    /// WebSockets, going offline and back, and both end with the same text holding every character.
    @Test func twoClientsTypeFiveThousandCharactersEachOverWebSocketsWhileGoingOfflineAndBack() async throws {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.log = nil
        let server = try ContrailServer(options: options)
        let url = "ws://127.0.0.1:\(try await server.start())/"
        let cutA = SwitchableConnector(WebSocketConnector(url: url))
        let cutB = SwitchableConnector(WebSocketConnector(url: url))
        let a = try await replica(cutA)
        let b = try await replica(cutB)
        let perClient = 5_000
        var random = SplitMix64(seed: 27)
        for step in 0..<perClient {
            for (index, memo) in [a.2, b.2].enumerated() {
                // Each client types its own letter (a–e or v–z) at a random spot, so every one can be counted.
                let letter = String(Character(Unicode.Scalar(UInt8((index == 0 ? 97 : 118) + step % 5))))
                try memo.body.insert(letter, at: Int(random.next() % UInt64(memo.body.count + 1)))
            }
            if step % 50 == 49 { await ChangeDelivery.main.drain() }
            if step % 1_000 == 300 { await cutA.cut() }
            if step % 1_000 == 700 { cutA.restore() }
            if step % 1_000 == 500 { await cutB.cut() }
            if step % 1_000 == 900 { cutB.restore() }
        }
        cutA.restore()
        cutB.restore()
        await ChangeDelivery.main.drain()
        #expect(await converge([a, b], timeout: .seconds(240)))
        let text = a.2.body.text
        #expect(text == b.2.body.text)
        #expect(text.unicodeScalars.count == 2 * perClient)
        #expect(text.filter { "abcde".contains($0) }.count == perClient && text.filter { "vwxyz".contains($0) }.count == perClient)
        await a.0.close(); await b.0.close(); await server.stop()
    }
}
