import ContrailSupport
import ContrailWire
import Foundation

/// Writes the server's log lines (one per session event and per error) through the configured
/// sink, stderr by default, as text or as one JSON object per line (``ServerLogFormat``). Session
/// tokens, credentials and hook parameters are never written.
struct ServerLog: Sendable {
    /// How serious an event is (the JSON `level`).
    enum Level: String, Sendable {
        case info, warning, error
    }

    let sink: (@Sendable (String) -> Void)?
    let format: ServerLogFormat

    init(sink: (@Sendable (String) -> Void)?, format: ServerLogFormat = .text) {
        self.sink = sink
        self.format = format
    }

    /// Writes one line about event `event` (a dotted name such as `session.created`), naming the
    /// session (its number) and the scope it concerns, if any. `message` is only built when a sink
    /// listens.
    func write(_ event: String, level: Level = .info, session: Int? = nil, scope: String? = nil,
               _ message: @autoclosure () -> String) {
        guard let sink else { return }
        sink(render(event, level: level, session: session, scope: scope, message: message(), time: Date()))
    }

    /// The line for one event in this log's format: the message as it is (text), or the JSON object.
    func render(_ event: String, level: Level, session: Int?, scope: String?, message: String, time: Date) -> String {
        guard format == .json else { return message }
        var writer = JSONWriter(sortedKeys: false)
        writer.append(byte: UInt8(ascii: "{"))
        writer.writeKey("time", first: true)
        writer.writeString(time.formatted(Self.timeStyle))
        writer.writeKey("level")
        writer.writeString(level.rawValue)
        writer.writeKey("event")
        writer.writeString(event)
        if let session {
            writer.writeKey("session")
            writer.write(.int(Int64(session)))
        }
        if let scope {
            writer.writeKey("scope")
            writer.writeString(scope)
        }
        writer.writeKey("message")
        writer.writeString(message)
        writer.append(byte: UInt8(ascii: "}"))
        return writer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// ISO 8601 in UTC with milliseconds: `2026-11-27T04:03:14.123Z`.
    private static let timeStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A sink writing each line to standard error: a text line after `contrail-server: `, a JSON
    /// line (``ServerLogFormat/json``) as it is, so that every line parses.
    static let standardError: @Sendable (String) -> Void = { line in
        let text = line.hasPrefix("{") ? line : "contrail-server: " + line
        OperatorLog.standardError(text)
    }
}
