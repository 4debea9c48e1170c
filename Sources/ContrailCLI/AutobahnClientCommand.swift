import ContrailWebSocket
import Foundation

/// `contrail autobahn-client`: the client testee for the Autobahn|Testsuite fuzzing server.
///
/// Reads `AUTOBAHN_URL` (default `ws://127.0.0.1:9001`) and `AUTOBAHN_AGENT` (default `contrail`), asks
/// the server for its case count, runs every case by echoing each message back until the server closes,
/// then asks it to write its reports.
enum AutobahnClientCommand {
    static let usage = """
    usage: contrail autobahn-client
      Environment: AUTOBAHN_URL (ws://127.0.0.1:9001), AUTOBAHN_AGENT (contrail).
    """

    static func run(_ arguments: [String]) async throws {
        if arguments.contains("-h") || arguments.contains("--help") {
            print(usage)
            return
        }
        guard arguments.isEmpty else { throw CLIError.usage(usage) }
        let environment = ProcessInfo.processInfo.environment
        var base = environment["AUTOBAHN_URL"] ?? "ws://127.0.0.1:9001"
        while base.hasSuffix("/") { base.removeLast() }
        let agent = environment["AUTOBAHN_AGENT"] ?? "contrail"
        let agentQuery = agent.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "contrail"

        var options = WebSocketOptions()
        options.maxFrameSize = 64 << 20
        options.maxMessageSize = 64 << 20
        options.closeTimeout = .seconds(2)

        let countConnection = try await WebSocketConnection.connect(to: "\(base)/getCaseCount", options: options)
        var count = 0
        for try await message in countConnection.messages {
            if case .text(let text) = message { count = Int(text.trimmingCharacters(in: .whitespaces)) ?? 0 }
        }
        print("autobahn-client: \(count) cases")
        let start = ContinuousClock.now
        for index in 1...max(count, 1) where count > 0 {
            let connection: WebSocketConnection
            do {
                connection = try await WebSocketConnection.connect(
                    to: "\(base)/runCase?case=\(index)&agent=\(agentQuery)", options: options)
            } catch {
                print("case \(index): could not connect: \(error)")
                continue
            }
            do {
                for try await message in connection.messages {
                    try await connection.send(message)
                }
            } catch {
                // The fuzzing server provokes failures on purpose; the report judges them.
            }
            if index % 50 == 0 { print("autobahn-client: \(index)/\(count) cases") }
        }
        let elapsed = ContinuousClock.now - start
        print("autobahn-client: ran \(count) cases in \(elapsed)")
        let report = try await WebSocketConnection.connect(to: "\(base)/updateReports?agent=\(agentQuery)",
                                                           options: options)
        do {
            for try await _ in report.messages {}
        } catch {}
        print("autobahn-client: reports updated")
    }
}
