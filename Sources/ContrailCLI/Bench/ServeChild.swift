import Foundation

/// A `contrail serve` child process of this very binary, for figures that need a server's own
/// CPU time (read from `/proc/<pid>/stat`), which in-process servers share with everything else.
struct ServeChild {
    let process: Process
    let port: UInt16

    /// Starts `contrail serve --port 0 --quiet --no-pages` with `arguments` and waits (up to 30 s)
    /// for the port it prints.
    static func start(_ arguments: [String]) async throws -> ServeChild {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["serve", "--port", "0", "--quiet", "--no-pages"] + arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // The port line comes first; read it off the main actor (the read blocks).
        let handle = pipe.fileHandleForReading
        let port = await Task.detached { () -> UInt16? in
            var text = ""
            let prefix = "listening on ws://127.0.0.1:"
            while true {
                let data = handle.availableData
                if data.isEmpty { return nil }
                text += String(decoding: data, as: UTF8.self)
                if let range = text.range(of: prefix), let end = text[range.upperBound...].firstIndex(of: "/") {
                    return UInt16(text[range.upperBound..<end])
                }
            }
        }.value
        guard let port else {
            process.terminate()
            throw SyncBenchError("contrail serve \(arguments.joined(separator: " ")) did not start")
        }
        return ServeChild(process: process, port: port)
    }

    /// CPU seconds (user + system) the child has used so far.
    func cpuSeconds() throws -> Double {
        try Self.cpuSeconds(of: "\(process.processIdentifier)")
    }

    /// CPU seconds (user + system) process `pid` (or `self`) has used so far, from `/proc/<pid>/stat`.
    static func cpuSeconds(of pid: String) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name's closing parenthesis: state is field 3, utime 14, stime 15.
        guard let close = stat.lastIndex(of: ")") else { throw SyncBenchError("unreadable /proc stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw SyncBenchError("unreadable /proc stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Context switches (voluntary and not) of the child's threads so far, from
    /// `/proc/<pid>/task/*/status`: how often its threads went to sleep or were preempted.
    func contextSwitches() throws -> Int {
        let tasks = "/proc/\(process.processIdentifier)/task"
        var total = 0
        for task in try FileManager.default.contentsOfDirectory(atPath: tasks) {
            // A thread that ended since the listing has no status any more.
            guard let status = try? String(contentsOfFile: "\(tasks)/\(task)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total += Int(line.split(separator: "\t").last.map(String.init) ?? "") ?? 0
            }
        }
        return total
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
