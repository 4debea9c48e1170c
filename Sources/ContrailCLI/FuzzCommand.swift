import ContrailFuzz
import Foundation

/// `contrail fuzz convergence`: long convergence campaigns; prints the seed of every failure.
enum FuzzCommand {
    static let usage = """
    usage: contrail fuzz convergence [--seeds N] [--start S] [--websocket | --child-server]
                                     [--steps MIN-MAX] [--shrink] [--timeout SECONDS] [--no-restarts]
                                     [--mixed-versions] [--shared-values] [--replay FILE]
      Runs N seeded convergence runs (default 1000, seeds S..S+N-1, default S = 1): 2-5 clients on one
      scope make random edits, switch modes, pause, drop connections, undo and redo while the server
      restarts; then every replica must equal the server and a fresh fetch, nothing may stay pending,
      and no acknowledged insert may be lost. Prints every failing seed (shrunk with --shrink).
      --websocket      clients and an in-process server talk over WebSocket on 127.0.0.1
      --child-server   the server is `contrail serve` in a child process, SIGKILLed at each restart
      --timeout        how long a run may take to settle at the end (default 20)
      --no-restarts    never restart the server
      --mixed-versions every second client does not know the class FuzzSticker, which the others insert
      --shared-values  half the edits type into and delete from a SharedText and add to a SharedCounter
      --replay FILE    replays one run printed after a failure (CONTRAIL_FUZZ_TRACE=1 prints its frames)
    Exit status 1 when any seed failed.
    usage: contrail fuzz peer --url ws://HOST:PORT/ --scope NAME [--seed N]
      A Swift client the JavaScript fuzzer (Tests/JS/fuzz/convergence.mjs) drives on stdin.
    """

    @MainActor
    static func run(_ arguments: [String]) async throws {
        if arguments.first == "peer" { return try await FuzzPeerCommand.run(Array(arguments.dropFirst())) }
        guard arguments.first == "convergence" else { throw CLIError.usage(usage) }
        var seeds: UInt64 = 1000
        var start: UInt64 = 1
        var server = ConvergenceFuzzer.Server.inMemory
        var shrink = false
        var steps: ClosedRange<Int>?
        var timeout = 20
        var restarts = true
        var mixedVersions = false
        var sharedValues = false
        var replay: String?
        var rest = arguments.dropFirst()
        func number(_ flag: String) throws -> UInt64 {
            guard let text = rest.popFirst(), let value = UInt64(text) else { throw CLIError.usage("\(flag) needs a number\n\(usage)") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--seeds": seeds = try number(argument)
            case "--start": start = try number(argument)
            case "--timeout": timeout = Int(try number(argument))
            case "--websocket": server = .webSocket
            case "--child-server": server = .childProcess(executable: CommandLine.arguments[0])
            case "--shrink": shrink = true
            case "--no-restarts": restarts = false
            case "--mixed-versions": mixedVersions = true
            case "--shared-values": sharedValues = true
            case "--replay":
                guard let path = rest.popFirst() else { throw CLIError.usage("--replay needs a file\n\(usage)") }
                replay = path
            case "--steps":
                let parts = (rest.popFirst() ?? "").split(separator: "-").compactMap { Int($0) }
                guard parts.count == 2, parts[0] >= 1, parts[0] <= parts[1] else { throw CLIError.usage("--steps needs MIN-MAX\n\(usage)") }
                steps = parts[0]...parts[1]
            case "-h", "--help": print(usage); return
            default: throw CLIError.usage("unknown argument '\(argument)'\n\(usage)")
            }
        }
        let fuzzer = ConvergenceFuzzer(server: server)
        fuzzer.settleTimeout = .seconds(timeout)
        fuzzer.restarts = restarts
        fuzzer.mixedVersions = mixedVersions
        fuzzer.sharedValues = sharedValues
        if let steps { fuzzer.steps = steps }
        if let replay {
            // A shrunk run as printed after FAIL: {"clients": N, "operations": [...]}.
            let data = try Data(contentsOf: URL(fileURLWithPath: replay))
            let run = try JSONDecoder().decode(ConvergenceFuzzer.Replay.self, from: data)
            let failure = await fuzzer.run(run.operations, clients: run.clients)
            print(failure.map { "FAIL \($0)" } ?? "converged")
            if failure != nil { exit(1) }
            return
        }
        var counts: [String: Int] = [:]
        let began = ContinuousClock.now
        for seed in start..<(start + seeds) {
            if (seed - start) % 500 == 0, seed > start { print("… \(seed - start) seeds"); fflush(nil) }
            guard var example = await fuzzer.run(seed: seed) else { continue }
            counts[example.failure.kind.rawValue, default: 0] += 1
            if shrink { example = await fuzzer.shrink(example) }
            print("FAIL \(example)")
            fflush(nil)
        }
        let failed = counts.values.reduce(0, +)
        let elapsed = ContinuousClock.now - began
        print("\(seeds) seeds in \(elapsed): \(seeds - UInt64(failed)) converged, \(failed) failed"
              + counts.sorted { $0.key < $1.key }.map { " (\($0.key): \($0.value))" }.joined())
        print("local change sets settled: " + fuzzer.settlements.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if failed > 0 { exit(1) }
    }
}
