import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// `session.detach(scope)` against a Contrail server: pending change sets reach the server first,
/// and fetching the scope again brings it back in sync.
@MainActor
@Suite struct DetachLifecycleTests {
    let base = ClientTests()

    @Test func detachAgainstTheServerSendsPendingChangesAndRefetchWorks() async throws {
        let server = try ContrailServer(options: Wire.options())
        let (scope, board) = base.makeScope()
        let client = try await Client.sync(scope, connector: server.connector(), options: testOptions())
        let session = try #require(client.session)
        session.setMode(.manual, for: scope)
        board.title = "pending at detach"
        #expect(try await session.detach(scope, timeout: .seconds(30)).isEmpty)
        let root = board.uuid.wireString
        #expect(await server.state(ofScope: "Board")?["objects"]?[root]?["properties"]?["title"] == "pending at detach")
        // Someone else changes the scope while it is detached; a local edit stays local.
        let other = ServerTestClient(server: server)
        try await other.createSession()
        _ = try await other.fetch("Board", index: 1)
        _ = try await other.sync(index: 2, fragments: [Wire.fragment("change", root, "Board", ["score": 42])])
        board.title = "local only"
        #expect(board.score == 0)
        // Fetching again brings the server's state back and syncing resumes.
        try await session.fetch(scope)
        #expect(board.score == 42 && board.title == "pending at detach")
        _ = try await other.sync(index: 3, fragments: [Wire.fragment("change", root, "Board", ["score": 43])])
        #expect(await eventually { board.score == 43 })
        await client.close()
        await server.stop()
    }
}
