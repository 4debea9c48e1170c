import Foundation

let usage = """
usage: contrail <command> [arguments]

commands:
  serve            run a Contrail sync server (see contrail serve --help)
  admin            sessions, scopes, export/import, compaction and backups of a running server
                   (see contrail admin --help)
  scope            a scope's history: list change sets, show the state at a point, restore it,
                   mark named revisions (see contrail scope --help)
  bench            run the benchmarks (see contrail bench --help)
  log              inspect or replay a fragment log file (see contrail log --help)
  autobahn-client  run every Autobahn test case against AUTOBAHN_URL (conformance testee)
  echo-server      run a WebSocket echo server (Autobahn server testee)
  fuzz             convergence campaigns (see contrail fuzz --help)
  test-client      an app that edits offline with a fragment log, for crash tests
"""

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "bench": try await BenchCommand.run(Array(arguments.dropFirst()))
    case "serve": try await ServeCommand.run(Array(arguments.dropFirst()))
    case "admin": try await AdminCommand.run(Array(arguments.dropFirst()))
    case "scope": try await ScopeCommand.run(Array(arguments.dropFirst()))
    case "log": try await LogCommand.run(Array(arguments.dropFirst()))
    case "autobahn-client": try await AutobahnClientCommand.run(Array(arguments.dropFirst()))
    case "echo-server": try await EchoServerCommand.run(Array(arguments.dropFirst()))
    case "fuzz": try await FuzzCommand.run(Array(arguments.dropFirst()))
    case "test-client": try await TestClientCommand.run(Array(arguments.dropFirst()))
    case "-h", "--help", nil: print(usage)
    case let other?: throw CLIError.usage("unknown command '\(other)'\n\(usage)")
    }
} catch let error as CLIError {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("contrail: \(error)\n".utf8))
    exit(1)
}
