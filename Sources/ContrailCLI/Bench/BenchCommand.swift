import Foundation

/// `contrail bench [model|scope|query|json|websocket|tls|sync|durability|text|collections|bigscope|store|cluster|connections|reconnect|all] [--json] [--smoke]`
enum BenchCommand {
    static let usage = """
    usage: contrail bench [model|scope|query|json|websocket|tls|sync|durability|text|collections|bigscope|store|cluster|connections|reconnect|all] [--json] [--smoke] [--grants] [--only PART]
      Runs the benchmarks (build with -c release for real figures). Each figure is printed with a
      baseline measured in the same run and ratio = value / baseline. `cluster` (not in `all`)
      needs nats-server installed. `connections` (not in `all`) starts `contrail serve` and opens
      --sessions N idle sessions (default 10000) against it; it raises the descriptor limit.
      --json   one JSON object per line: {"name","value","unit","baseline","ratio"}
      --smoke  tiny iteration counts: proves the code paths, figures are meaningless
      --sessions N  sessions for `connections`
      `reconnect` (not in `all`) holds --clients N sessions (default 1000) on a `contrail serve`,
      restarts it (SIGTERM, a second down) and measures the clients' peak connect rate against
      the same restart with jitter 0.
      `tls` compares echo over wss:// with ws:// (and the handshake) in the same run; it needs
      OpenSSL 3 (libssl.so.3) at run time. `text` replays the editing traces of shared/data (or
      CONTRAIL_EDITING_TRACES) against Yrs through python3 + pycrdt when installed.
      `bigscope`: first sync of a scope of --objects N tiles (default 100000) over a WebSocket (time
      to a usable scope, peak client RSS) against loading them from a Codable JSON file.
      `store`: server RSS per object after loading a scope of --objects N tiles (default 100000)
      from its log, next to its JSON state size; the server's CPU time to load and to apply them.
      `collections`: collection edits (Protocol §8.24): bytes of one append, and offline edits
      (log and wire bytes per edit, time to settle after reconnecting), for 1,000 and 5,000 appends
      or --offline-edits N[,N...] (e.g. 50000: minutes, not in the default set).
      --grants sync's server gives each session an identity with a dozen grants (patterns included),
               so that the sync.* figures show the cost of the grant checks next to a run without
      --only PART  only that part of the suite: `scope --only log_modify` (scope.log_modify_p50/_p99)
    """

    static func run(_ arguments: [String]) async throws {
        var options = BenchOptions()
        var suites: [String] = []
        var sessions = 10_000
        var clients = 1_000
        var objects: Int?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case ConnectionsBench.plainEchoChildArgument:
                try ConnectionsBench.servePlainEchoChild()
                return
            case "--sessions":
                guard let value = rest.popFirst(), let number = Int(value), number > 0 else {
                    throw CLIError.usage("--sessions needs a positive number\n\(usage)")
                }
                sessions = number
            case "--clients":
                guard let value = rest.popFirst(), let number = Int(value), number > 0 else {
                    throw CLIError.usage("--clients needs a positive number\n\(usage)")
                }
                clients = number
            case "--objects":
                guard let value = rest.popFirst(), let number = Int(value), number > 0 else {
                    throw CLIError.usage("--objects needs a positive number\n\(usage)")
                }
                objects = number
            case "--offline-edits":
                guard let value = rest.popFirst(), case let sizes = value.split(separator: ",").compactMap({ Int($0) }),
                      !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 })
                else { throw CLIError.usage("--offline-edits needs positive numbers\n\(usage)") }
                options.offlineEdits = sizes
            case "--json": options.json = true
            case "--smoke": options.smoke = true
            case "--grants": options.grants = true
            case "--only":
                guard let value = rest.popFirst() else { throw CLIError.usage("--only needs a part of a suite\n\(usage)") }
                options.only = value
            case "-h", "--help": print(usage); return
            case "model", "scope", "query", "json", "websocket", "tls", "sync", "durability", "text", "collections", "bigscope", "store",
                 "cluster", "connections", "reconnect":
                suites.append(argument)
            case "all": suites += ["model", "scope", "query", "json", "websocket", "tls", "sync", "durability", "text", "collections", "bigscope", "store"]
            default: throw CLIError.usage("unknown bench argument '\(argument)'\n\(usage)")
            }
        }
        if suites.isEmpty { suites = ["model", "scope", "query", "json", "websocket", "tls", "sync", "durability", "text", "collections", "bigscope", "store"] }
        if !options.json {
            print(pad("name", 34) + pad("value", 16) + pad("unit", 10) + pad("baseline", 16) + "ratio")
        }
        for suite in suites {
            let figures: [BenchFigure]
            switch suite {
            case "model": figures = try await ModelBench.run(options)
            case "scope": figures = try await ScopeBench.run(options)
            case "query": figures = try await QueryBench.run(options)
            case "json": figures = try await JSONBench.run(options)
            case "websocket": figures = try await WebSocketBench.run(options)
            case "tls": figures = try await TLSBench.run(options)
            case "sync": figures = try await SyncBench.run(options)
            case "durability": figures = try await DurabilityBench.run(options)
            case "text": figures = try await TextBench.run(options)
            case "collections": figures = try await CollectionsBench.run(options)
            case "bigscope": figures = try await BigScopeBench.run(options, objects: objects)
            case "store": figures = try await StoreBench.run(options, objects: objects)
            case "cluster": figures = try await ClusterBench.run(options)
            case "connections": figures = try await ConnectionsBench.run(options, sessions: sessions)
            case "reconnect": figures = try await ReconnectBench.run(options, clients: clients)
            default: figures = []
            }
            for figure in figures { report(figure, json: options.json) }
        }
    }

    static func report(_ figure: BenchFigure, json: Bool) {
        if json {
            print(figure.jsonLine)
        } else {
            print(pad(figure.name, 34) + pad(format(figure.value), 16) + pad(figure.unit, 10)
                  + pad(format(figure.baseline), 16) + String(format: "%.3f", figure.ratio))
        }
        fflush(nil)
    }

    private static func format(_ value: Double) -> String {
        value >= 1000 ? String(format: "%.0f", value) : String(format: "%.4g", value)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
