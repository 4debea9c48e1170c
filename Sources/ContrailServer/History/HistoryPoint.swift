import Foundation

/// A point in a scope's history: after a change set (its sequence number), at a named revision,
/// or at a time (the last change set accepted at or before it).
public enum HistoryPoint: Sendable, Equatable, CustomStringConvertible {
    /// After the change set with this sequence number (0: the empty scope).
    case sequence(Int)
    /// At the revision with this label.
    case revision(String)
    /// After the last change set accepted at or before this time.
    case time(Date)

    /// Reads a point as the CLI and the admin API take it: digits are a sequence number, an ISO 8601
    /// time (`2026-11-27T08:00:00Z`, with or without fractional seconds) a time, anything else a
    /// revision label.
    public init(parsing text: String) {
        if !text.isEmpty, text.utf8.count < 19, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
           let number = Int(text) {
            self = .sequence(number)
            return
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) {
            self = .time(date)
            return
        }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) {
            self = .time(date)
            return
        }
        self = .revision(text)
    }

    /// The point as ``init(parsing:)`` reads it.
    public var description: String {
        switch self {
        case .sequence(let number): String(number)
        case .revision(let label): label
        case .time(let date): date.formatted(.iso8601)
        }
    }
}
