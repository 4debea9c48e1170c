import Contrail
@testable import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// `--log-format json` (issue 28): one JSON object per line with time, level, event, session and
/// scope; the text format stays the default; never a token or a hook parameter in either.
@MainActor
@Suite struct StructuredLogTests {
    nonisolated static let secret = "s3cret-token-do-not-log"

    /// Runs a session with a token (and one with a wrong token) against a server logging in `format`.
    static func lines(_ format: ServerLogFormat) async throws -> [String] {
        let lines = ServerLogLines()
        var options = ServerOptions()
        options.log = lines.sink
        options.logFormat = format
        options.failedAttemptDelay = .milliseconds(1)
        options.sessionHook = { params, _ in
            params["token"]?.stringValue == secret ? .allowEverything : .deny(reason: "wrong token")
        }
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        let scope = Scope(name: "LoggedBoard")
        let board = Board()
        scope.root = board
        let client = try await Client.sync(scope, url: "ws://127.0.0.1:\(port)/", options: ClientOptions(sessionParams: ["token": .string(secret)]))
        let changeSet = scope.modify { board.score = 7 }
        #expect(await changeSet?.settled() == .completed)
        var wrong = ClientOptions(sessionParams: ["token": .string(secret + "-but-wrong")])
        wrong.connectTimeout = .seconds(30)
        await #expect(throws: SyncError.self) { _ = try await Client(url: "ws://127.0.0.1:\(port)/", options: wrong).connect() }
        await client.close()
        await server.stop()
        return lines.all
    }

    @Test func jsonLinesCarryTimeLevelEventSessionAndScope() async throws {
        let lines = try await Self.lines(.json)
        #expect(lines.count >= 4, "\(lines)")
        var events: [String: [String: JSON]] = [:]
        for line in lines {
            #expect(!line.contains(Self.secret), "a token in the log: \(line)")
            #expect(!line.contains("\n"))
            let object = try #require(try JSON(parsing: line).objectValue, "not a JSON object: \(line)")
            let time = try #require(object["time"]?.stringValue)
            #expect((try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time)) != nil, "time \(time)")
            #expect(["info", "warning", "error"].contains(object["level"]?.stringValue ?? ""))
            let event = try #require(object["event"]?.stringValue)
            #expect(object["message"]?.stringValue?.isEmpty == false)
            events[event] = object
        }
        #expect(events["server.listening"]?["message"]?.stringValue?.hasPrefix("listening on ws://127.0.0.1:") == true)
        #expect(events["session.created"]?["session"] == .int(1))
        #expect(events["scope.fetched"]?["session"] == .int(1))
        #expect(events["scope.fetched"]?["scope"] == "LoggedBoard")
        #expect(events["peer.denied"]?["level"] == "warning")
        #expect(events["server.stopped"] != nil)
    }

    @Test func textStaysTheDefaultAndKeepsItsLines() async throws {
        #expect(ServerOptions().logFormat == .text)
        let lines = try await Self.lines(.text)
        #expect(lines.contains { $0.hasPrefix("session 1 created from ") }, "\(lines)")
        #expect(lines.contains { $0 == "session 1: fetched 'LoggedBoard' as scope 0" })
        #expect(!lines.contains { $0.hasPrefix("{") })
        #expect(!lines.contains { $0.contains(Self.secret) })
    }

    @Test func jsonEscapesWhatAScopeNameMayHold() throws {
        let log = ServerLog(sink: { _ in }, format: .json)
        let line = log.render("scope.loaded", level: .info, session: nil, scope: "a \"quoted\"\nname\u{7}", message: "m",
                              time: Date(timeIntervalSince1970: 0))
        let object = try #require(try JSON(parsing: line).objectValue)
        #expect(object["scope"] == .string("a \"quoted\"\nname\u{7}"))
        #expect(object["time"] == "1970-01-01T00:00:00.000Z")
        #expect(object["session"] == nil)
        #expect(!line.contains("\n"))
    }
}
