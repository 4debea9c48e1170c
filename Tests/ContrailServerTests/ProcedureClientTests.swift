import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// `scope.modify(procedure:)` on the client: what it sends, and the check before sending (§4.7).
@MainActor
@Suite struct ProcedureClientTests {
    let base = ClientTests()

    func rename() throws -> [ProcedureConstraint] {
        [ProcedureConstraint(kind: .change, className: "Board", properties: ["title": .hasNewValue])]
    }

    @Test func procedureCallIsSentAtomicWithItsName() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        let changeSet = try #require(scope.modify(procedure: "Board.rename", constraints: try rename()) { board.title = "new" })
        #expect(changeSet.procedure == "Board.rename")
        let sync = try await base.nextSync(peer)
        #expect(sync.procedure == "Board.rename")
        #expect(sync.atomic == true)
        #expect(sync.fragments.map(\.properties) == [["title": "new"]])
        await client.close()
    }

    @Test func failingConstraintsRevertLocallyAndSendNothing() async throws {
        let connector = ScriptedConnector()
        let (client, session, peer) = try await base.connect(connector)
        let (scope, board) = base.makeScope()
        try await base.fetch(scope, session: session, peer: peer)
        // An extra key (score) is not allowed by the constraint.
        let changeSet = try #require(scope.modify(procedure: "Board.rename", constraints: try rename()) {
            board.title = "new"
            board.score = 99
        })
        #expect(changeSet.state == .reverted)
        #expect(board.title == "server" && board.score == 7)
        #expect(await base.quiet(peer))
        #expect(!scope.canUndo)
        // Without client constraints the server alone decides: the call goes out.
        scope.modify(procedure: "Board.rename") { board.score = 99 }
        #expect(try await base.nextSync(peer).procedure == "Board.rename")
        await client.close()
    }

    @Test func arrayConstraintsUseTheRememberedOriginals() async throws {
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let remove = [ProcedureConstraint(kind: .change, className: "Board", properties: ["cards": .arrayRemove])]
        let insert = [ProcedureConstraint(kind: .change, className: "Board", properties: ["cards": .arrayInsert]),
                      ProcedureConstraint(kind: .add, className: "Card", allowsAdditionalProperties: true)]
        let grown = try #require(scope.modify(procedure: "Board.removeCard", constraints: remove) { board.cards.append(Card()) })
        #expect(grown.state == .reverted)
        #expect(board.cards.isEmpty)
        let added = try #require(scope.modify(procedure: "Board.addCard", constraints: insert) { board.cards.append(Card()) })
        #expect(added.state != .reverted)
        #expect(board.cards.count == 1)
        let shrunk = try #require(scope.modify(procedure: "Board.removeCard", constraints: remove) { board.cards.removeAll() })
        #expect(shrunk.state != .reverted)
        #expect(board.cards.isEmpty)
    }

    @Test func plainValuesAndUnknownKeysAreCheckedOnTheClient() async throws {
        let scope = Scope(name: "Board")
        let board = Board()
        scope.root = board
        let exact = [ProcedureConstraint(kind: .change, className: "Board", properties: ["score": .value(3)])]
        #expect(scope.modify(procedure: "Board.score", constraints: exact) { board.score = 4 }?.state == .reverted)
        #expect(board.score == 0)
        #expect(scope.modify(procedure: "Board.score", constraints: exact) { board.score = 3 }?.state != .reverted)
        // A key the class does not have never matches on the client (iOS's rule).
        let unknown = [ProcedureConstraint(kind: .change, className: "Board", properties: ["nope": .hasNewValue],
                                           allowsAdditionalProperties: true)]
        #expect(scope.modify(procedure: "Board.nope", constraints: unknown) { board.title = "t" }?.state == .reverted)
        #expect(board.title == "")
    }

    @Test func endToEndAgainstTheServer() async throws {
        var options = Wire.options()
        options.procedures = [ServerProcedure(try ProcedureDeclaration("Board.rename", constraints: try rename()))]
        let server = try ContrailServer(options: options)
        let (scope, board) = base.makeScope()
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        let session = try #require(client.session)
        board.score = 1
        #expect(await eventually { session.pendingChangeSets == 0 })
        let accepted = try #require(scope.modify(procedure: "Board.rename") { board.title = "second" })
        #expect(await accepted.settled() == .completed)
        let refused = try #require(scope.modify(procedure: "Board.explode") { board.title = "third" })
        #expect(await refused.settled() == .reverted)
        let mismatched = try #require(scope.modify(procedure: "Board.rename") { board.score = 5 })
        #expect(await mismatched.settled() == .reverted)
        #expect(board.title == "second" && board.score == 1)
        await client.close()
        await server.stop()
    }
}
