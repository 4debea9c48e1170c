import ContrailNATS
import Foundation

/// Where `contrail serve --nats` finds the credentials of a NATS that requires authorization:
/// the file named by `--nats-credentials`, else the `CONTRAIL_NATS_*` environment variables.
/// Never the command line (other users see it in the process list).
enum NATSCredentialsSource {
    /// The credentials in `file` (refused when other users may read it), or in the environment
    /// when no file is given; `.none` when neither names any. Runs once at startup, before any
    /// event loop (the file read blocks).
    static func load(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> NATSCredentials {
        guard let file else {
            do { return try NATSCredentials.environment(environment) } catch { throw CLIError.usage("contrail serve: \(error)") }
        }
        let attributes: [FileAttributeKey: Any]
        let text: String
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: file)
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw CLIError.usage("--nats-credentials: cannot read '\(file)': \(error.localizedDescription)")
        }
        if let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o004 != 0 {
            throw CLIError.usage("--nats-credentials: '\(file)' is readable by every user: chmod o-r it (0600 or 0640)")
        }
        do { return try NATSCredentials.parsing(text) } catch { throw CLIError.usage("--nats-credentials: '\(file)': \(error)") }
    }
}
