import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Two versions of an app on one scope (issue 26, Protocol §8.23). Version 1 is this target's
/// `Board`/`Card`, as a `Scope` with the sync client; version 2 is a raw protocol peer that adds
/// what the newer app has: `Board.owner: Person?` (a class version 1 lacks), `Board.tags: [String]`,
/// a `note` on `Card`, and a `Sticker` (another unknown class) inside `Board.cards`.
@MainActor
@Suite("Mixed app versions")
struct MixedVersionTests {
    let person = Wire.uuid(), card = Wire.uuid(), sticker = Wire.uuid()

    /// Version 2's writes; returns the root's UUID.
    func newerAppWrites(_ server: ContrailServer, scope name: String) async throws -> (ServerTestClient, String) {
        let v2 = ServerTestClient(server: server)
        try await v2.createSession()
        let (_, state) = try await v2.fetch(name, index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let reply = try await v2.sync(index: 2, fragments: [
            Wire.fragment("add", person, "Person", ["name": "Ada"]),
            Wire.fragment("add", card, "Card", ["text": "first", "votes": 0, "note": "from v2"]),
            Wire.fragment("add", sticker, "Sticker", ["label": "hot"]),
            Wire.fragment("change", root, "Board", ["title": "plan", "owner": .string(person), "tags": ["a", "b"],
                                                    "cards": Wire.array([card, sticker])]),
        ])
        #expect(reply["fragmentReplies"]?.arrayValue?.allSatisfy { $0["error"] == nil } == true, "\(reply)")
        return (v2, root)
    }

    /// The server's state of `name` as a fresh raw peer fetches it: objects by UUID.
    func serverObjects(_ server: ContrailServer, scope name: String) async throws -> [String: JSON] {
        let peer = ServerTestClient(server: server)
        try await peer.createSession()
        let (_, state) = try await peer.fetch(name, index: 1)
        var objects: [String: JSON] = [:]
        for fragment in state["fragments"]?.arrayValue ?? [] {
            if let uuid = fragment["uuid"]?.stringValue { objects[uuid] = fragment }
        }
        await peer.transport.close(code: 1000, reason: "")
        return objects
    }

    func cards(_ objects: [String: JSON], root: String) -> [String] {
        objects[root]?["properties"]?["cards"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// The older app's replica of `name`: a scope with a `Board` root, not synced yet.
    func olderReplica(_ name: String) -> (Scope, Board) {
        let scope = Scope(name: name)
        let board = Board()
        scope.root = board
        return (scope, board)
    }

    /// The older app's replica of `name`, synced with `server` (through `received`'s tap when given).
    func olderApp(_ server: ContrailServer, scope name: String, received: ReceivedTally? = nil) async throws -> (Scope, Board, Client) {
        let (scope, board) = olderReplica(name)
        let connector: any SyncConnector = received.map { $0.connector(server.connector()) } ?? server.connector()
        let client = try await Client.sync(scope, connector: connector, options: testOptions())
        return (scope, board, client)
    }

    @Test func theOlderAppFetchesEditsAndUndoesWithoutDroppingWhatItDoesNotKnow() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (v2, root) = try await newerAppWrites(server, scope: "Mixed")
        // Version 1 fetches: before issue 26 this failed ("unknown model class 'Person'") and retried forever.
        let (scope, board, client) = try await olderApp(server, scope: "Mixed")
        #expect(board.title == "plan")
        #expect(board.cards.map(\.text) == ["first"])
        #expect(Set(scope.unknownObjects.map(\.uuid.wireString)) == [person, sticker])
        #expect(scope.unknownValues(of: board)["tags"] == ["a", "b"])
        #expect(scope.unknownValues(of: board)["owner"] == .string(person))
        #expect(scope.unknownValues(of: board.cards[0])["note"] == "from v2")

        // It edits: a vote, an insert before the card, a new card that it adds whole.
        let added = Card()
        added.text = "from v1"
        let edit = scope.modify {
            board.cards[0].votes = 3
            board.cards.insert(added, at: 0)
            board.score = 7
        }
        #expect(await edit?.settled() == .completed)
        var objects = try await serverObjects(server, scope: "Mixed")
        #expect(cards(objects, root: root) == [added.uuid.wireString, card, sticker])
        #expect(objects[root]?["properties"]?["owner"] == .string(person))
        #expect(objects[root]?["properties"]?["tags"] == ["a", "b"])
        #expect(objects[root]?["properties"]?["score"] == 7)
        #expect(objects[card]?["properties"]?["note"] == "from v2")
        #expect(objects[card]?["properties"]?["votes"] == 3)
        #expect(objects[person]?["properties"]?["name"] == "Ada")
        #expect(objects[sticker]?["clsName"] == "Sticker")

        // A move and an undo: the sticker stays after the card it followed.
        let move = scope.modify { board.cards.reverse() }
        #expect(await move?.settled() == .completed)
        objects = try await serverObjects(server, scope: "Mixed")
        #expect(cards(objects, root: root).filter { $0 != sticker } == [card, added.uuid.wireString])
        #expect(cards(objects, root: root).count == 3)
        scope.undo()
        let undo = try #require(scope.history.last)
        #expect(await undo.settled() == .completed)
        objects = try await serverObjects(server, scope: "Mixed")
        #expect(cards(objects, root: root) == [added.uuid.wireString, card, sticker])

        // The newer app keeps writing what only it knows; the older one keeps it up to date.
        _ = try await v2.sync(index: 3, fragments: [Wire.fragment("change", person, "Person", ["name": "Grace"])])
        let renamed = await eventually(.seconds(30)) {
            scope.unknownObjects.first { $0.uuid.wireString == person }?.properties["name"] == "Grace"
        }
        #expect(renamed)
        await client.close()
    }

    /// The seed-98 divergence (issue 30): a change set of the older app that holds a collection with
    /// an object it does not know (the sticker, kept in the collection's whole value) and that the
    /// server refuses (atomic, one of its objects deleted meanwhile) is reverted; the kept whole
    /// value goes back too, so the card the change set inserted is not left in it (and attached
    /// through it) for good. Control: the same edit accepted ends in both the replica and the server.
    @Test func aRefusedChangeSetTakesItsInsertOutOfTheKeptWholeCollection() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (v2, root) = try await newerAppWrites(server, scope: "MixedRefused")
        let received = ReceivedTally()
        let (scope, board, client) = try await olderApp(server, scope: "MixedRefused", received: received)
        let session = try #require(client.session)
        #expect(scope.unknownValues(of: board)["cards"] == Wire.array([card, sticker]))

        // The newer app deletes the card; the older one, holding back what it receives, inserts a card
        // and votes on the deleted one in one atomic change set: refused whole. Its kept whole value
        // then holds the inserted card (as sent), until the revert.
        session.pauseIncoming()
        let before = received.counts.broadcasts
        let removal = try await v2.sync(index: 3, fragments: [Wire.fragment("change", root, "Board", ["cards": Wire.array([sticker])])])
        #expect(removal["fragmentReplies"]?.arrayValue?.allSatisfy { $0["error"] == nil } == true, "\(removal)")
        #expect(await eventually(.seconds(30)) { received.counts.broadcasts > before }, "the deletion reached the older app")
        let replies = received.counts.replies
        let inserted = Card()
        inserted.text = "refused"
        let refused = scope.modifyAtomically {
            board.cards.append(inserted)
            board.cards[0].votes = 9
        }
        #expect(scope.unknownValues(of: board)["cards"] == Wire.array([card, sticker, inserted.uuid.wireString]))
        #expect(await eventually(.seconds(30)) { received.counts.replies > replies }, "the refusal reached the older app")
        // What the replica shows the moment the revert is done (before any fetch it asks for).
        var atRevert: JSON?
        var insertedAtRevert: JSON?
        let observer = NSObject()
        refused?.onStateChange(observer) { state in
            guard state == .reverted else { return }
            atRevert = scope.stateJSON()["objects"]?[root]?["properties"]?["cards"]
            insertedAtRevert = scope.stateJSON()["objects"]?[inserted.uuid.wireString]
        }
        session.resumeIncoming()
        #expect(await refused?.settled() == .reverted)
        #expect(atRevert != nil && atRevert?.arrayValue?.contains(.string(inserted.uuid.wireString)) == false,
                "the refused card is out of the kept whole value at once: \(String(describing: atRevert))")
        #expect(insertedAtRevert == nil)
        // As the server has it: no card but the sticker, and the refused card gone from the replica.
        let rootFragment = { scope.stateJSON()["objects"]?[root]?["properties"]?["cards"] }
        #expect(await eventually(.seconds(30)) { rootFragment() == Wire.array([sticker]) }, "\(String(describing: rootFragment()))")
        #expect(scope.stateJSON()["objects"]?[inserted.uuid.wireString] == nil)
        #expect(board.cards.isEmpty)
        #expect(cards(try await serverObjects(server, scope: "MixedRefused"), root: root) == [sticker])

        // Control: the same insert, accepted, is in the kept whole value and on the server.
        let accepted = Card()
        accepted.text = "accepted"
        let edit = scope.modifyAtomically { board.cards.append(accepted) }
        #expect(await edit?.settled() == .completed)
        #expect(cards(try await serverObjects(server, scope: "MixedRefused"), root: root) == [sticker, accepted.uuid.wireString])
        #expect(await eventually(.seconds(30)) { rootFragment() == Wire.array([sticker, accepted.uuid.wireString]) })
        #expect(board.cards.map(\.uuid) == [accepted.uuid])
        await client.close()
    }

    /// The other seed-98 state (issue 30): a pending edit of the older app, made before the newer
    /// app put a sticker into the same collection, must not make the kept whole value `null` when
    /// the sticker arrives (a bare `nil` beside a `JSON` is `JSON.null`): the sticker stays where the
    /// server has it, woven into what the pending edit reaches. Control: the server ends with the
    /// same three.
    @Test func aPendingEditKeepsAStickerThatArrivesMeanwhile() async throws {
        let server = try ContrailServer(options: Wire.options())
        let v2 = ServerTestClient(server: server)
        try await v2.createSession()
        let (_, state) = try await v2.fetch("MixedPending", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        _ = try await v2.sync(index: 2, fragments: [
            Wire.fragment("add", card, "Card", ["text": "first", "votes": 0]),
            Wire.fragment("change", root, "Board", ["cards": Wire.array([card])]),
        ])
        let received = ReceivedTally()
        let (scope, board, client) = try await olderApp(server, scope: "MixedPending", received: received)
        let session = try #require(client.session)
        #expect(scope.unknownValues(of: board)["cards"] == nil)

        // Held back: the newer app's sticker after the card, then the reply to the older app's append.
        session.pauseIncoming()
        let before = received.counts
        _ = try await v2.sync(index: 3, fragments: [
            Wire.fragment("add", sticker, "Sticker", ["label": "hot"]),
            Wire.fragment("change", root, "Board", ["cards": Wire.array([card, sticker])]),
        ])
        #expect(await eventually(.seconds(30)) { received.counts.broadcasts > before.broadcasts })
        let appended = Card()
        appended.text = "second"
        let append = scope.modify { board.cards.append(appended) }
        #expect(await eventually(.seconds(30)) { received.counts.replies > before.replies })
        // What the replica keeps the moment the sticker is applied, before the reply.
        var kept: JSON??
        let observer = NSObject()
        scope.onChanges(observer) { changeSet in
            guard changeSet.origin == .remote, kept == nil else { return }
            kept = .some(scope.unknownValues(of: board)["cards"])
        }
        session.resumeIncoming()
        #expect(await append?.settled() == .completed)
        #expect(kept == .some(Wire.array([card, sticker, appended.uuid.wireString])), "\(String(describing: kept))")
        let expected = Wire.array([card, sticker, appended.uuid.wireString])
        #expect(cards(try await serverObjects(server, scope: "MixedPending"), root: root) == [card, sticker, appended.uuid.wireString])
        #expect(await eventually(.seconds(30)) { scope.stateJSON()["objects"]?[root]?["properties"]?["cards"] == expected })
        #expect(Set(scope.unknownObjects.map(\.uuid.wireString)) == [sticker])
        await client.close()
    }

    /// Whether `replica` (a scope's `stateJSON()` objects) holds the objects of `server` (a fresh
    /// fetch's, by UUID), each of its class with every value the server holds (a property the
    /// server never got a value for is the replica's default, which the fetch leaves out).
    func holds(_ replica: [String: JSON], _ server: [String: JSON]) -> Bool {
        Set(replica.keys) == Set(server.keys) && server.allSatisfy { uuid, fragment in
            replica[uuid]?["clsName"] == fragment["clsName"]
                && (fragment["properties"]?.objectValue ?? [:]).allSatisfy { replica[uuid]?["properties"]?[$0.key] == $0.value }
        }
    }

    /// A refused change set that set a single reference whose whole value the scope kept (it named
    /// a `Sticker`, a class the older app does not know, that only this reference reaches), a kept
    /// value the edit cleared at flush, is reverted: the app's reference is back to nil, the kept
    /// value back to the sticker the server holds, nothing unknown is lost, and the replica is what
    /// a fresh fetch of the server gives. Control: the same kind of edit accepted ends on the server.
    @Test func aRefusedReferenceEditGivesBackTheUnknownObjectItReplaced() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (v2, root) = try await newerAppWrites(server, scope: "MixedPinned")
        let pin = Wire.uuid()
        let pinning = try await v2.sync(index: 3, fragments: [
            Wire.fragment("add", pin, "Sticker", ["label": "pinned"]),
            Wire.fragment("change", root, "Board", ["pinned": .string(pin)]),
        ])
        #expect(pinning["fragmentReplies"]?.arrayValue?.allSatisfy { $0["error"] == nil } == true, "\(pinning)")
        let received = ReceivedTally()
        let (scope, board, client) = try await olderApp(server, scope: "MixedPinned", received: received)
        let session = try #require(client.session)
        #expect(board.pinned == nil)
        #expect(scope.unknownValues(of: board)["pinned"] == .string(pin))
        #expect(scope.unknownObjects.contains { $0.uuid.wireString == pin })

        // The newer app deletes the card; the older one, holding back what it receives, pins it and
        // votes on it in one atomic change set: refused whole. Making it clears the kept value.
        session.pauseIncoming()
        let before = received.counts.broadcasts
        let removal = try await v2.sync(index: 4, fragments: [Wire.fragment("change", root, "Board", ["cards": Wire.array([sticker])])])
        #expect(removal["fragmentReplies"]?.arrayValue?.allSatisfy { $0["error"] == nil } == true, "\(removal)")
        #expect(await eventually(.seconds(30)) { received.counts.broadcasts > before }, "the deletion reached the older app")
        let replies = received.counts.replies
        let refused = scope.modifyAtomically {
            board.pinned = board.cards[0]
            board.cards[0].votes = 9
        }
        #expect(scope.unknownValues(of: board)["pinned"] == nil, "the edit cleared the kept value")
        #expect(await eventually(.seconds(30)) { received.counts.replies > replies }, "the refusal reached the older app")
        session.resumeIncoming()
        #expect(await refused?.settled() == .reverted)
        #expect(board.pinned == nil)

        // The server still pins the sticker; the replica shows what a fresh fetch does.
        let objects = try await serverObjects(server, scope: "MixedPinned")
        #expect(objects[root]?["properties"]?["pinned"] == .string(pin))
        #expect(objects[pin]?["clsName"] == "Sticker")
        let replica = { scope.stateJSON()["objects"]?.objectValue ?? [:] }
        #expect(await eventually(.seconds(30)) { holds(replica(), objects) }, "replica \(replica()) server \(objects)")
        #expect(scope.unknownValues(of: board)["pinned"] == .string(pin))
        #expect(scope.unknownObjects.contains { $0.uuid.wireString == pin })
        #expect(board.pinned == nil && board.cards.isEmpty)

        // Control: pinning a card of its own, accepted, replaces the sticker in both.
        let own = Card()
        own.text = "own"
        let edit = scope.modifyAtomically {
            board.cards.append(own)
            board.pinned = own
        }
        #expect(await edit?.settled() == .completed)
        #expect(try await serverObjects(server, scope: "MixedPinned")[root]?["properties"]?["pinned"] == .string(own.uuid.wireString))
        #expect(board.pinned === own)
        #expect(scope.unknownValues(of: board)["pinned"] == nil)
        await client.close()
    }

    /// The older app's replica of "MixedLog" with the fragment log at `url` attached (restored from it).
    func loggedBoard(_ url: URL) throws -> (Scope, Board, FragmentLog, FragmentLog.RestoreReport) {
        let (scope, board) = olderReplica("MixedLog")
        let log = FragmentLog(url: url)
        let report = try log.attach(to: scope)
        return (scope, board, log, report)
    }

    /// Offline edits of the older app go through its fragment log and a restart, and still leave
    /// the newer app's data in place.
    @Test func aRestartFromTheFragmentLogKeepsWhatTheOlderAppDoesNotKnow() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (_, root) = try await newerAppWrites(server, scope: "MixedLog")
        let url = FileManager.default.temporaryDirectory.appending(path: "contrail-mixed-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            let (scope, board, log, _) = try loggedBoard(url)
            let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
            await client.close()
            // Offline: a vote and a removal of the only card it sees; then the app quits.
            scope.modify { board.cards[0].votes = 9 }
            scope.modify { board.cards.removeAll() }
            try log.compact()
            try await log.waitUntilDurable()
            try log.close()
        }
        let (scope, board, log, report) = try loggedBoard(url)
        #expect(report.pendingChangeSets == 2)
        #expect(Set(scope.unknownObjects.map(\.uuid.wireString)) == [person, sticker])
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        let settled = await eventually(.seconds(30)) { client.session?.pendingChangeSets == 0 }
        #expect(settled)
        let objects = try await serverObjects(server, scope: "MixedLog")
        #expect(cards(objects, root: root) == [sticker], "the card is gone, the sticker it could not see is not")
        #expect(objects[root]?["properties"]?["owner"] == .string(person))
        #expect(objects[root]?["properties"]?["tags"] == ["a", "b"])
        #expect(objects[person]?["properties"]?["name"] == "Ada")
        #expect(board.cards.isEmpty)
        #expect(scope.unknownValues(of: board)["cards"] == Wire.array([sticker]))
        await client.close()
        try log.close()
    }
}
