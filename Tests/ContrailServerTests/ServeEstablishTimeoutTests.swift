import ContrailTestSupport
import Foundation
import Testing

/// `contrail serve --establish-timeout`: how long a new connection has to send its `SessionCreate`.
@Suite("contrail serve --establish-timeout")
struct ServeEstablishTimeoutTests {
    @Test func aConnectionThatSendsNothingIsClosedAfterTheGivenTimeAndAPromptOneGetsASession() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try await ServerProcess(data: data, arguments: ["--establish-timeout", "0.5"])
        // Positive control: a client that sends its SessionCreate at once has a session.
        let prompt = try await ServerTestClient.connect(port: server.port)
        #expect(try await !prompt.createSession().isEmpty)
        // One that sends nothing is closed with 4096 once the half second has passed: waited for less
        // than the default 10 s, so that the default would fail this (a bound, generous for a busy machine).
        let silent = try await ServerTestClient.connect(port: server.port)
        let closed = try await silent.awaitClose(timeout: .seconds(9))
        #expect(closed?.code == 4096, "\(String(describing: closed))")
        #expect(closed?.reason.contains("session-establish-timedout") == true, "\(String(describing: closed))")
    }

    @Test func aValueThatIsNotAPositiveNumberOfSecondsIsAUsageError() async throws {
        for value in ["abc", "0", "-1"] {
            let child = try ChildProcess(try ServerProcess.executable, ["serve", "--port", "0", "--establish-timeout", value])
            #expect(await child.waitForExit())
            #expect(child.termination != .exited(0))
            #expect(child.text.contains("--establish-timeout: '\(value)' is not a positive number of seconds"), "\(child.text)")
        }
    }
}
