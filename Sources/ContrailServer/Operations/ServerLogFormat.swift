/// How a server writes its log lines (``ServerOptions/logFormat``).
public enum ServerLogFormat: String, Sendable, CaseIterable {
    /// One line of text per event (the default): `session 12 created from 203.0.113.5 (client version 0.2.0)`.
    case text
    /// One JSON object per line, for log collectors: `time` (ISO 8601, UTC, milliseconds), `level`
    /// (`info`, `warning`, `error`), `event` (`session.created`, `scope.loaded`, …), `session` (its
    /// number) and `scope` (its name) where the event has them, and `message` (the text line). Session
    /// tokens, credentials and hook parameters are never written, in either format.
    case json
}
