import Contrail
import ContrailFuzz
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// An object the server deleted comes back as the server last had it (issue 23, deliverable 2):
/// an undone removal keeps what others added meanwhile, and a move into another collection wins
/// over a concurrent removal from the one it left.
@MainActor
@Suite struct ResurrectionTests {
    let clock = TestClock()

    func makeServer(dataDirectory: URL? = nil) throws -> ContrailServer {
        var options = ServerOptions()
        options.establishTimeout = .seconds(120)
        options.log = nil
        options.dataDirectory = dataDirectory
        return try ContrailServer(options: options)
    }

    func makeReplica(_ connector: any SyncConnector) async throws -> (client: Client, scope: Scope, board: FuzzBoard) {
        let scope = Scope(name: "Resurrection")
        let board = FuzzBoard()
        scope.root = board
        let client = try await Client.sync(scope, connector: connector, options: testOptions(clock: clock))
        return (client, scope, board)
    }

    func settled(_ changeSet: ChangeSet?) async throws -> ChangeSet.State {
        try await #require(changeSet).settled(timeout: .seconds(30))
    }

    /// A adds an item; B adds a note to it (acknowledged) while A applies nothing remote; A removes
    /// the item (its last holder: the server deletes it and the note) and undoes the removal.
    /// Returns the replicas once every one is back in realtime and nothing is pending.
    func undoneRemoval(server: ContrailServer) async throws -> [(client: Client, scope: Scope, board: FuzzBoard)] {
        let a = try await makeReplica(server.connector())
        let b = try await makeReplica(server.connector())
        let item = FuzzItem()
        item.label = "item"
        #expect(try await settled(a.scope.modify { a.board.items.append(item) }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.count == 1 })
        let session = try #require(a.client.session)
        session.setMode(.pushOnly, for: a.scope)
        let note = FuzzNote()
        note.text = "from B"
        #expect(try await settled(b.scope.modify { b.board.items[0].notes.append(note) }) == .completed)
        #expect(try await settled(a.scope.modify { a.board.items.removeAll() }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.isEmpty }, "the server deleted the item")
        #expect(try await settled(a.scope.undo()) == .completed)
        session.setMode(.realtime, for: a.scope)
        return [a, b]
    }

    @Test func undoneRemovalKeepsTheNotesOthersAdded() async throws {
        let server = try makeServer()
        let replicas = try await undoneRemoval(server: server)
        let fresh = try await makeReplica(server.connector())
        for replica in replicas + [fresh] {
            #expect(await eventually(.seconds(30)) {
                replica.board.items.map(\.label) == ["item"] && replica.board.items.first?.notes.map(\.text) == ["from B"]
            }, "every replica has the item back with B's note")
        }
        #expect(Set((replicas + [fresh]).map { $0.scope.stateJSON() }).count == 1)
        for replica in replicas + [fresh] { await replica.client.close() }
        await server.stop()
    }

    @Test func deletedObjectsSurviveARestartInTheSnapshot() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("resurrection-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try makeServer(dataDirectory: directory)
        let a = try await makeReplica(first.connector())
        let item = FuzzItem()
        let note = FuzzNote()
        note.text = "kept"
        item.notes = [note]
        #expect(try await settled(a.scope.modify { a.board.items.append(item) }) == .completed)
        // The undo's `add` carries the item without its note: only the server's last state has it.
        #expect(try await settled(a.scope.modify { a.board.items.removeAll() }) == .completed)
        await a.client.close()
        await first.stop()
        let second = try makeServer(dataDirectory: directory)
        let b = try await makeReplica(second.connector())
        let returned = FuzzItem(uuid: item.uuid)
        #expect(try await settled(b.scope.modify { b.board.items.append(returned) }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.first?.notes.map(\.text) == ["kept"] },
                "the restarted server brought the item back with its note")
        await b.client.close()
        await second.stop()
    }

    @Test func moveIntoAnotherCollectionWinsOverARemovalFromTheOneItLeft() async throws {
        let server = try makeServer()
        let a = try await makeReplica(server.connector())
        let b = try await makeReplica(server.connector())
        let item = FuzzItem()
        item.label = "moved"
        let note = FuzzNote()
        note.text = "n"
        item.notes = [note]
        #expect(try await settled(a.scope.modify { a.board.items.append(item) }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.count == 1 })
        let session = try #require(a.client.session)
        session.setMode(.pushOnly, for: a.scope)
        #expect(try await settled(b.scope.modify { b.board.items.removeAll() }) == .completed)
        let move = try #require(a.scope.modify { a.board.shelf.append(a.board.items.removeFirst()) })
        #expect(try await move.settled(timeout: .seconds(30)) == .completed, "the move won: nothing dropped")
        #expect(move.drops.isEmpty)
        session.setMode(.realtime, for: a.scope)
        let fresh = try await makeReplica(server.connector())
        for replica in [a, b, fresh] {
            #expect(await eventually(.seconds(30)) {
                replica.board.items.isEmpty && replica.board.shelf.map(\.label) == ["moved"]
                    && replica.board.shelf.first?.notes.map(\.text) == ["n"]
            })
        }
        // Positive control: a move within the collection the item was removed from loses (removal wins).
        let (other, second, third) = (FuzzItem(), FuzzItem(), FuzzItem())
        #expect(try await settled(a.scope.modify { a.board.items = [other, second, third] }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.count == 3 })
        session.setMode(.pushOnly, for: a.scope)
        #expect(try await settled(b.scope.modify { b.board.items.removeFirst() }) == .completed)
        let within = try #require(a.scope.modify { a.board.items.append(a.board.items.removeFirst()) })
        #expect(try await within.settled(timeout: .seconds(30)) == .partiallyReverted)
        #expect(within.drops.map(\.element) == [other.uuid])
        session.setMode(.realtime, for: a.scope)
        let rest = [second.uuid, third.uuid]
        #expect(await eventually(.seconds(30)) { a.board.items.map(\.uuid) == rest && b.board.items.map(\.uuid) == rest })
        for replica in [a, b, fresh] { await replica.client.close() }
        await server.stop()
    }

    /// A deleted object brought back keeps its shared text's characters (Protocol §8.21), across a
    /// restart too: the server revives the text's state, not its plain text, sends that state to the
    /// sender before its reply and to the others in the add, and later edits of any replica apply.
    @Test func aRevivedObjectKeepsItsSharedTextsCharacters() async throws {
        ModelRegistry.register(FuzzBoard.self, FuzzCard.self)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("resurrection-text-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try makeServer(dataDirectory: directory)
        let a = try await makeReplica(first.connector())
        let b = try await makeReplica(first.connector())
        let card = FuzzCard()
        try card.body.insert("hello", at: 0)
        #expect(try await settled(a.scope.modify { a.board.items.append(card) }) == .completed)
        #expect(await eventually(.seconds(30)) { b.board.items.count == 1 })
        let held = try #require(b.board.items.first as? FuzzCard)
        #expect(try await settled(b.scope.modify { try? held.body.insert(" world", at: 5) }) == .completed)
        #expect(await eventually(.seconds(30)) { card.body.text == "hello world" })
        #expect(try await settled(a.scope.modify { a.board.items.removeAll() }) == .completed)
        await a.client.close()
        await b.client.close()
        await first.stop()

        let second = try makeServer(dataDirectory: directory)
        let c = try await makeReplica(second.connector())
        let returned = FuzzCard(uuid: card.uuid)
        #expect(try await settled(c.scope.modify { c.board.items.append(returned) }) == .completed)
        #expect(await eventually(.seconds(30)) { returned.body.text == "hello world" }, "got \(returned.body.text.debugDescription)")
        let d = try await makeReplica(second.connector())
        #expect(await eventually(.seconds(30)) { (d.board.items.first as? FuzzCard)?.body.text == "hello world" })
        #expect(try await settled(c.scope.modify { try? returned.body.insert("!", at: 11) }) == .completed)
        let other = try #require(d.board.items.first as? FuzzCard)
        #expect(try await settled(d.scope.modify { try? other.body.insert(">", at: 0) }) == .completed)
        #expect(await eventually(.seconds(30)) { returned.body.text == ">hello world!" && other.body.text == ">hello world!" },
                "got \(returned.body.text.debugDescription) and \(other.body.text.debugDescription)")
        #expect(returned.body.lastError == nil && other.body.lastError == nil)
        await c.client.close()
        await d.client.close()
        await second.stop()
    }
}
