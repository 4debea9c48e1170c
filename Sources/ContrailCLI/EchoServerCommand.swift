import ContrailWebSocket
import Foundation

/// `contrail echo-server [--host H] [--port N]`: a WebSocket echo server (the Autobahn server testee).
/// Prints the bound port on its first line and serves until killed.
enum EchoServerCommand {
    static let usage = """
    usage: contrail echo-server [--host HOST] [--port N]
      Echoes every WebSocket message back. --port 0 (the default) picks a free port; the first
      line printed is "listening on HOST:PORT".
    """

    static func run(_ arguments: [String]) async throws {
        var host = "127.0.0.1"
        var port: UInt16 = 0
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--port":
                guard let value = rest.popFirst(), let number = UInt16(value) else {
                    throw CLIError.usage("--port needs a number from 0 to 65535\n\(usage)")
                }
                port = number
            case "--host":
                guard let value = rest.popFirst() else { throw CLIError.usage("--host needs a value\n\(usage)") }
                host = value
            case "-h", "--help":
                print(usage)
                return
            default:
                throw CLIError.usage("unknown argument '\(argument)'\n\(usage)")
            }
        }
        var options = WebSocketOptions()
        options.maxFrameSize = 64 << 20
        options.maxMessageSize = 64 << 20
        options.closeTimeout = .seconds(2)
        let server = WebSocketServer(host: host, port: port, options: options)
        let bound = try await server.start()
        print("listening on \(host):\(bound)")
        fflush(nil)
        for await connection in server.connections {
            // Echo on the connection's own loop thread: no hop to Swift concurrency per message, and the
            // payload goes back as received (text validated, never copied into a `String`). The handler
            // keeps the connection alive until it closes (the connection then drops the handler); nothing
            // may consume `messages` meanwhile, or it would take messages before the handler is set.
            connection.setPayloadHandler { opcode, payload in
                try? connection.sendWithoutWaiting(opcode, payload: payload)
            }
        }
    }
}
