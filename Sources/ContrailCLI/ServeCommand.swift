import Contrail
import ContrailServer
import Foundation
import Synchronization

/// `contrail serve`: runs a Contrail sync server until interrupted.
enum ServeCommand {
    static let help = """
    usage: contrail serve [--host ADDRESS] [--port PORT] [--data DIR] [options]

    Runs a Jetstream-compatible sync server over WebSocket. Scopes are schema-agnostic and are
    created on their first fetch, or up front with --scope. Logs one line per session and per error to stderr. Stop it
    with Ctrl-C (SIGINT) or SIGTERM: logs are written out before it exits.

      --host ADDRESS          address to bind (default 127.0.0.1; put TLS in front of the server
                              before exposing it beyond loopback)
      --port PORT             port to listen on (default 3000; 0 picks a free one)
      --data DIR              persist every scope as a log file in DIR (default: in memory only,
                              lost on exit)
      --session-expiry SECS   end sessions idle for this long (default 600)
      --ping-interval SECS    keep-alive ping interval (default 10)
      --max-message-bytes N   largest accepted frame (default 16777216)
      --max-fragments N       most fragments per ScopeSync (default 10000)
      --max-objects N         most objects per scope (default 1000000)
      --max-resend N          most unacknowledged messages kept per session (default 100000)
      --scope NAME            create scope NAME up front (repeatable; others are created on
                              their first fetch)
      --token TOKEN           require SessionCreate params to hold {"token": TOKEN}
      --procedures FILE       procedures clients may call, with their constraints (JSON:
                              {"procedures": [{"name": "Canvas.rename", "constraints": [...]}]},
                              optionally with scope roots: "roots": {"Canvas": {"clsName": "Canvas"}})
      --quiet                 do not log
      -h, --help              show this help
    """

    static func run(_ arguments: [String]) async throws {
        guard var options = try parse(arguments) else {
            print(help)
            return
        }
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        FileHandle.standardError.write(Data("contrail serve: listening on ws://\(options.host):\(port)/\n".utf8))
        await waitForTermination()
        await server.stop()
    }

    /// The options from the arguments; nil when help was asked for.
    static func parse(_ arguments: [String]) throws -> ServerOptions? {
        var options = ServerOptions()
        options.port = 3000
        var remaining = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = remaining.popFirst() else { throw CLIError.usage("\(flag) needs a value\n\n\(help)") }
            return next
        }
        func number<T: FixedWidthInteger>(_ flag: String, _: T.Type) throws -> T {
            let text = try value(flag)
            guard let parsed = T(text), parsed >= 0 else { throw CLIError.usage("\(flag): '\(text)' is not a valid number\n\n\(help)") }
            return parsed
        }
        func seconds(_ flag: String) throws -> Duration {
            let text = try value(flag)
            guard let parsed = Double(text), parsed > 0, parsed.isFinite else {
                throw CLIError.usage("\(flag): '\(text)' is not a positive number of seconds\n\n\(help)")
            }
            return .milliseconds(Int64(parsed * 1000))
        }
        while let flag = remaining.popFirst() {
            switch flag {
            case "-h", "--help": return nil
            case "--host": options.host = try value(flag)
            case "--port": options.port = try number(flag, UInt16.self)
            case "--data": options.dataDirectory = URL(filePath: try value(flag), directoryHint: .isDirectory)
            case "--session-expiry": options.sessionExpiry = try seconds(flag)
            case "--ping-interval": options.pingInterval = try seconds(flag)
            case "--max-message-bytes": options.maxMessageBytes = try number(flag, Int.self)
            case "--max-fragments": options.maxFragmentsPerMessage = try number(flag, Int.self)
            case "--max-objects": options.maxObjectsPerScope = try number(flag, Int.self)
            case "--max-resend": options.maxResendBuffer = try number(flag, Int.self)
            case "--scope": options.scopes.append(try value(flag))
            case "--token":
                let token = try value(flag)
                options.sessionHook = { params, _ in params["token"] == .string(token) }
            case "--quiet": options.log = nil
            case "--procedures": (options.procedures, options.roots) = try declarations(file: try value(flag))
            default: throw CLIError.usage("contrail serve: unknown option '\(flag)'\n\n\(help)")
            }
        }
        return options
    }

    /// The procedures and scope roots declared in a JSON file (see `ProcedureDeclaration`, `ScopeRoot`).
    private static func declarations(file: String) throws -> ([ServerProcedure], [String: ScopeRoot]) {
        let data: Data
        do { data = try Data(contentsOf: URL(filePath: file)) } catch {
            throw CLIError.usage("--procedures: cannot read '\(file)': \(error.localizedDescription)")
        }
        do {
            let json = try JSON(parsing: data)
            return (try ServerProcedure.list(json: json), try ScopeRoot.list(json: json))
        } catch {
            throw CLIError.usage("--procedures: '\(file)': \(error)")
        }
    }

    /// Returns when the process gets SIGINT or SIGTERM.
    private static func waitForTermination() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "contrail.serve.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SignalOnce(continuation)
            for number in [SIGINT, SIGTERM] {
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.fire() }
                source.resume()
                once.keep(source)
            }
        }
    }
}


/// Resumes a continuation on the first of several signals, and keeps the signal sources alive.
private final class SignalOnce: Sendable {
    private let state: Mutex<(continuation: CheckedContinuation<Void, Never>?, sources: [any DispatchSourceSignal])>

    init(_ continuation: CheckedContinuation<Void, Never>) {
        state = Mutex((continuation, []))
    }

    func keep(_ source: any DispatchSourceSignal) {
        state.withLock { $0.sources.append(source) }
    }

    func fire() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
