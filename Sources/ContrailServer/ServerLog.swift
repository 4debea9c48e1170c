import Foundation

/// Writes the server's log lines (one per session event and per error) through the configured
/// sink, stderr by default. Session tokens are never written.
struct ServerLog: Sendable {
    let sink: (@Sendable (String) -> Void)?

    /// Writes one line.
    func write(_ line: @autoclosure () -> String) {
        sink?(line())
    }

    /// A sink writing each line to standard error.
    static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(("contrail-server: " + line + "\n").utf8))
    }
}
