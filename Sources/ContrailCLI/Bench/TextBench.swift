import Contrail
import Foundation

/// `contrail bench text`: the `SharedText` CRDT (`TextDocument`) on the published editing traces
/// (`shared/data/editing-traces`, CC BY 4.0; found through `CONTRAIL_EDITING_TRACES`, or
/// `../shared/data/editing-traces` and `shared/data/editing-traces` from the working directory).
///
/// Figures (times are CPU milliseconds of the replaying thread or process, so that the shared
/// machine's load does not skew one side; best of a few rounds):
/// - `text.replay.automerge-paper`: the 259,778 patches applied as local edits, against Yrs (the
///   Rust port of Yjs, through Python's `pycrdt`, one transaction per patch) in the same run. Without
///   `pycrdt` the baseline is 0 (no ratio) and the bench says so.
/// - `text.merge.friendsforever`, `text.merge.clownschool`: the two agents' concurrent transactions,
///   each typed on a replica that holds exactly its parents, then every operation merged into one
///   document; the baseline is Yrs doing the same with its updates (0 without `pycrdt`).
/// - `text.bytes.automerge-paper`: the encoded state's size against the final text's.
/// - `text.rss.automerge-paper`: resident memory growth (KiB) of holding the replayed document,
///   against Yrs's growth in its Python process; `text.memory.automerge-paper`: the bytes the
///   document's storage holds (`TextDocument.memoryFootprint`: RSS growth under-reports, as freed
///   pages are reused), same baseline.
/// Every result is checked against the trace's `endContent`; a mismatch fails the bench.
enum TextBench {
    static func run(_ options: BenchOptions) async throws -> [BenchFigure] {
        guard let directory = tracesDirectory() else {
            FileHandle.standardError.write(Data("(text: no editing traces found; set CONTRAIL_EDITING_TRACES)\n".utf8))
            return []
        }
        let rounds = options.smoke ? 1 : 3
        let limit = options.smoke ? 2_000 : Int.max
        let paper = try load(directory.appending(path: "automerge-paper.json.gz"))
        let patches = Array(sequentialPatches(paper).prefix(limit))
        let expected = options.smoke ? nil : paper["endContent"]?.stringValue
        var figures: [BenchFigure] = []

        let rssBefore = residentKiB()
        var document = TextDocument(replica: "bench")
        let replay = try bestCPU(rounds: rounds) {
            document = TextDocument(replica: "bench")
            for patch in patches {
                if patch.delete > 0 { try document.delete(patch.position..<(patch.position + patch.delete)) }
                if !patch.insert.isEmpty { try document.insert(patch.insert, at: patch.position) }
            }
        }
        if let expected, document.text != expected { throw SyncBenchError("automerge-paper replay does not give endContent") }
        let rss = max(0, residentKiB() - rssBefore)
        let yrs = yrsBaseline(mode: "replay", trace: directory.appending(path: "automerge-paper.json.gz"), limit: limit, rounds: rounds)
        figures.append(BenchFigure(name: "text.replay.automerge-paper", value: replay * 1000, unit: "ms", baseline: yrs?["ms"]?.doubleValue ?? 0))
        let encoded = document.stateJSON.serialized().count
        figures.append(BenchFigure(name: "text.bytes.automerge-paper", value: Double(encoded), unit: "bytes",
                                   baseline: Double(document.text.utf8.count)))
        figures.append(BenchFigure(name: "text.rss.automerge-paper", value: Double(rss), unit: "KiB", baseline: yrs?["rssKiB"]?.doubleValue ?? 0))
        // RSS growth under-reports (freed pages of the trace's parse are reused): what the
        // document's storage holds says what it costs, against the same Yrs baseline.
        figures.append(BenchFigure(name: "text.memory.automerge-paper", value: Double(document.memoryFootprint) / 1024, unit: "KiB",
                                   baseline: yrs?["rssKiB"]?.doubleValue ?? 0))
        if let bytes = yrs?["bytes"]?.doubleValue, !options.json {
            print("(text: Yrs \(yrs?["version"]?.stringValue ?? "?") encodes the same document in \(Int(bytes)) bytes)")
        }
        if !options.json {
            let runs = document.runStatistics
            print("(text: automerge-paper holds \(runs.runs) runs, \(runs.deletedRuns) of them deleted with \(runs.deletedCharacters) characters)")
        }

        for name in ["friendsforever", "clownschool"] {
            let url = directory.appending(path: "\(name).json.gz")
            let trace = try load(url)
            let transactions = Array(concurrentTransactions(trace).prefix(options.smoke ? 300 : Int.max))
            var merged = ""
            let time = try bestCPU(rounds: rounds) { merged = try merge(transactions, agents: trace["numAgents"]?.int64Value ?? 2) }
            if !options.smoke, merged != trace["endContent"]?.stringValue { throw SyncBenchError("\(name) merge does not give endContent") }
            let baseline = yrsBaseline(mode: "merge", trace: url, limit: transactions.count, rounds: rounds)
            figures.append(BenchFigure(name: "text.merge.\(name)", value: time * 1000, unit: "ms", baseline: baseline?["ms"]?.doubleValue ?? 0))
        }
        return figures
    }

    struct Patch {
        var position: Int
        var delete: Int
        var insert: String
    }

    struct Transaction {
        var parents: [Int]
        var agent: Int
        var patches: [Patch]
    }

    /// Replays a concurrent trace: each transaction is typed on its agent's replica once that
    /// replica holds exactly the transaction's ancestors; then all operations go into one document.
    static func merge(_ transactions: [Transaction], agents: Int64) throws -> String {
        let count = max(1, Int(agents))
        let replicas = (0..<count).map { TextDocument(replica: "agent\($0)") }
        var seen = Array(repeating: Array(repeating: false, count: transactions.count), count: count)
        var operations = Array(repeating: [TextOperation](), count: transactions.count)
        for (index, transaction) in transactions.enumerated() {
            let agent = min(max(0, transaction.agent), count - 1)
            var stack = transaction.parents.filter { $0 < index && !seen[agent][$0] }
            var missing: [Int] = []
            while let next = stack.popLast() {
                if seen[agent][next] { continue }
                seen[agent][next] = true
                missing.append(next)
                stack += transactions[next].parents.filter { $0 < next && !seen[agent][$0] }
            }
            for earlier in missing.sorted() { try replicas[agent].apply(operations[earlier]) }
            for patch in transaction.patches {
                if patch.delete > 0 { operations[index] += try replicas[agent].delete(patch.position..<(patch.position + patch.delete)) }
                if let insert = try replicas[agent].insert(patch.insert, at: patch.position) { operations[index].append(insert) }
            }
            seen[agent][index] = true
        }
        let result = TextDocument(replica: "merged")
        for batch in operations { try result.apply(batch) }
        return result.text
    }

    static func tracesDirectory() -> URL? {
        var candidates = ["../shared/data/editing-traces", "shared/data/editing-traces", "/work/shared/data/editing-traces"]
        if let configured = ProcessInfo.processInfo.environment["CONTRAIL_EDITING_TRACES"] { candidates.insert(configured, at: 0) }
        return candidates.map { URL(fileURLWithPath: $0) }
            .first { FileManager.default.fileExists(atPath: $0.appending(path: "automerge-paper.json.gz").path) }
    }

    /// A gzipped JSON trace, through `gzip -dc`.
    static func load(_ url: URL) throws -> JSON {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SyncBenchError("gzip -dc \(url.path) failed") }
        return try JSON(parsing: data, limits: JSONLimits(maxDepth: 64, maxBytes: 1 << 30))
    }

    static func sequentialPatches(_ trace: JSON) -> [Patch] {
        (trace["txns"]?.arrayValue ?? []).flatMap { transaction in (transaction["patches"]?.arrayValue ?? []).compactMap(patch) }
    }

    static func concurrentTransactions(_ trace: JSON) -> [Transaction] {
        (trace["txns"]?.arrayValue ?? []).map { transaction in
            Transaction(parents: (transaction["parents"]?.arrayValue ?? []).compactMap { $0.int64Value.map(Int.init) },
                        agent: Int(transaction["agent"]?.int64Value ?? 0),
                        patches: (transaction["patches"]?.arrayValue ?? []).compactMap(patch))
        }
    }

    static func patch(_ json: JSON) -> Patch? {
        guard let position = json[0]?.int64Value, let delete = json[1]?.int64Value, let insert = json[2]?.stringValue else { return nil }
        return Patch(position: Int(position), delete: Int(delete), insert: insert)
    }

    /// CPU seconds of this thread for the fastest of `rounds` runs.
    static func bestCPU(rounds: Int, _ body: () throws -> Void) throws -> Double {
        var best = Double.infinity
        for _ in 0..<rounds {
            let start = threadCPU()
            try body()
            best = min(best, threadCPU() - start)
        }
        return best
    }

    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) else { return 0 }
        return kib
    }

    /// Yrs through `python3` and `pycrdt`: `{"ms", "bytes", "rssKiB", "version"}`, or nil (said on
    /// standard error) when either is missing.
    static func yrsBaseline(mode: String, trace: URL, limit: Int, rounds: Int) -> JSON? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", yrsScript, mode, trace.path, String(min(limit, Int(Int32.max))), String(rounds)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let json = try? JSON(parsing: data) else {
            FileHandle.standardError.write(Data("(text: no Yrs baseline for \(mode): python3 with pycrdt is not installed; `pip install pycrdt`)\n".utf8))
            return nil
        }
        return json
    }

    /// The Yrs side, in Python: the same replay (one transaction per patch) or merge (each
    /// transaction typed on its agent's document, then every update merged into one), timed in CPU
    /// seconds, checked against `endContent` when the whole trace runs.
    static let yrsScript = #"""
    import gzip, json, sys, time
    import pycrdt
    mode, path, limit, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    trace = json.load(gzip.open(path))
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0
    best, result = None, {}
    for _ in range(rounds):
        before = rss()
        if mode == "replay":
            patches = [p for t in trace["txns"] for p in t["patches"]][:limit]
            start = time.process_time()
            doc = pycrdt.Doc()
            text = doc.get("t", type=pycrdt.Text)
            for pos, delete, insert in patches:
                with doc.transaction():
                    if delete:
                        del text[pos:pos + delete]
                    if insert:
                        text.insert(pos, insert)
            elapsed = time.process_time() - start
            final = str(text)
            result = {"bytes": len(doc.get_update()), "rssKiB": max(0, rss() - before)}
        else:
            txns = trace["txns"][:limit]
            start = time.process_time()
            agents = [pycrdt.Doc(client_id=agent + 1) for agent in range(trace["numAgents"])]
            texts = [doc.get("t", type=pycrdt.Text) for doc in agents]
            seen = [set() for _ in agents]
            updates = []
            for index, txn in enumerate(txns):
                agent = txn["agent"]
                stack = [p for p in txn["parents"] if p not in seen[agent]]
                missing = []
                while stack:
                    t = stack.pop()
                    if t in seen[agent]:
                        continue
                    seen[agent].add(t)
                    missing.append(t)
                    stack.extend(p for p in txns[t]["parents"] if p not in seen[agent])
                for t in sorted(missing):
                    agents[agent].apply_update(updates[t])
                doc, text = agents[agent], texts[agent]
                state = doc.get_state()
                with doc.transaction():
                    for patch in txn["patches"]:
                        pos, delete, insert = patch[0], patch[1], patch[2]
                        if delete:
                            del text[pos:pos + delete]
                        if insert:
                            text.insert(pos, insert)
                updates.append(doc.get_update(state))
                seen[agent].add(index)
            merged = pycrdt.Doc()
            for update in updates:
                merged.apply_update(update)
            final = str(merged.get("t", type=pycrdt.Text))
            elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    if limit >= len(trace["txns"]) or mode == "replay" and limit >= sum(len(t["patches"]) for t in trace["txns"]):
        assert final == trace["endContent"], "Yrs does not reach endContent"
    result.update({"ms": best * 1000, "version": getattr(pycrdt, "__version__", "?")})
    print(json.dumps(result))
    """#
}
