import Foundation

/// The committed TLS test certificates (`Tests/Fixtures/TLS`, made by its `generate.sh`) and the
/// Python scripts there that act as independent TLS endpoints.
public enum TLSFixtures {
    /// The folder of the fixtures.
    public static let directory = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Fixtures/TLS")

    /// The path of fixture `name` (e.g. `"server.pem"`).
    public static func path(_ name: String) -> String { directory.appending(path: name).path }

    /// The public-key pin of `name` (`"server"` or `"server2"`): base64 SHA-256 of its SubjectPublicKeyInfo.
    public static func pin(_ name: String) throws -> String {
        try String(contentsOfFile: path("\(name).pin"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts one of the Python scripts with `python3` (CI installs it: a missing one is a failure).
    public static func python(_ script: String, _ arguments: [String]) throws -> ChildProcess {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let python = searchPath.split(separator: ":").map({ "\($0)/python3" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw TestFailure("python3 is not installed: the TLS interoperability tests need it (apt-get install python3)")
        }
        return try ChildProcess(URL(filePath: python), ["-u", path(script)] + arguments)
    }

    /// A Python TLS terminator in front of the plain server on `backendPort`, one listener per
    /// certificate name (`"server"`, `"expired"`, ...): the port of each. `listeners` adds listeners
    /// by label with a certificate name and the highest TLS version it speaks (`"1.1"`, `"1.2"`).
    public static func terminator(backendPort: UInt16, certificates: [String],
                                  listeners: [(label: String, certificate: String, maxVersion: String)] = [])
        async throws -> (ChildProcess, [String: UInt16])
    {
        var arguments = ["--backend", "\(backendPort)"]
        for name in certificates { arguments += ["--serve", name, path("\(name).pem"), path("\(name)-key.pem")] }
        for listener in listeners {
            arguments += ["--serve", listener.label, path("\(listener.certificate).pem"), path("\(listener.certificate)-key.pem"),
                          "--max-tls", listener.label, listener.maxVersion]
        }
        let process = try python("tls_terminator.py", arguments)
        guard await process.waitForOutput(containing: "ready\n") else {
            await process.kill()
            throw TestFailure("the TLS terminator did not start: \(process.text)")
        }
        var ports: [String: UInt16] = [:]
        for name in certificates + listeners.map(\.label) {
            ports[name] = try await process.port(after: "\(name) listening on ", terminator: { $0 == "\n" })
        }
        return (process, ports)
    }
}
