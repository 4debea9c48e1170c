import ContrailTestSupport
import Foundation
import Testing

/// `contrail serve --establish-timeout` and `--handshake-timeout`: how long a new connection has to
/// send its `SessionCreate`, and its HTTP request before that.
@Suite("contrail serve's connection timeouts")
struct ServeTimeoutTests {
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

    @Test func aRequestThatStopsHalfwayIsClosedUnansweredAfterTheHandshakeTimeoutAndAWholeOneIsAnswered() async throws {
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try await ServerProcess(data: data, arguments: ["--handshake-timeout", "0.5"])
        // Positive control: a whole plain HTTP request gets an answer (the pages).
        let whole = try await PagesHTTP.request(port: server.port, path: "/")
        #expect(whole.status == 200)
        // Half a request: closed without an answer once the half second has passed. The default
        // timeout would close it at 10 s, so the bound of 8 s tells them apart.
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: TestFailure.self) {
            _ = try await PagesHTTP.exchange(port: server.port, bytes: Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
        }
        #expect(clock.now - start < .seconds(8))
    }

    @Test func aValueThatIsNotAPositiveNumberOfSecondsIsAUsageError() async throws {
        for flag in ["--establish-timeout", "--handshake-timeout"] {
            for value in ["abc", "0", "-1"] {
                let child = try ChildProcess(try ServerProcess.executable, ["serve", "--port", "0", flag, value])
                #expect(await child.waitForExit())
                #expect(child.termination != .exited(0))
                #expect(child.text.contains("\(flag): '\(value)' is not a positive number of seconds"), "\(child.text)")
            }
        }
    }
}
