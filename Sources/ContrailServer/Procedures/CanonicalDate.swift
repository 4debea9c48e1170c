import ContrailWire
import Foundation

/// Dates in the canonical wire encoding (Protocol §8.1: epoch seconds as a JSON number).
///
/// The original JS client sends dates as ISO-8601 strings (`Date.toJSON`, e.g.
/// `"2015-01-01T00:00:00.123Z"`). A schema-agnostic server cannot ask the model, so it takes a
/// string of exactly that shape as a date and stores it as epoch seconds: a late joiner's state
/// then carries the canonical number, whatever encoding the writer used. Applied to change sets
/// without a change-set id (the original clients'), so a Contrail client's `String` that happens to
/// look like a timestamp stays a string.
enum CanonicalDate {
    /// `fragments` with every ISO-8601 timestamp value (and every array made only of them)
    /// replaced by epoch seconds. O(total size of the properties).
    static func canonical(_ fragments: [SyncFragment]) -> [SyncFragment] {
        converted(fragments) ?? fragments
    }

    /// ``canonical(_:)-swift.type.method``, or nil when no value is a timestamp (what most change
    /// sets hold: then nothing is copied). O(total size of the properties).
    static func converted(_ fragments: [SyncFragment]) -> [SyncFragment]? {
        var result: [SyncFragment]?
        for (position, fragment) in fragments.enumerated() {
            for (key, value) in fragment.properties {
                guard let converted = canonical(value) else { continue }
                if result == nil { result = fragments }
                result?[position].properties[key] = converted
            }
        }
        return result
    }

    /// `accepted` (fragments of a change set converted by ``canonical(_:)-swift.type.method``) with
    /// every converted value put back as `received` had it. The original server broadcasts fragments
    /// as received (§4.10), and its JS client reads a number as milliseconds: another JS client must
    /// get the ISO string it can read, while the stored state keeps epoch seconds. O(total size).
    static func asReceived(_ accepted: [SyncFragment], received: [SyncFragment]) -> [SyncFragment] {
        let byUUID = Dictionary(received.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
        return accepted.map { fragment in
            guard let original = byUUID[fragment.uuid] else { return fragment }
            var fragment = fragment
            for (key, value) in original.properties {
                if let converted = canonical(value), fragment.properties[key] == converted { fragment.properties[key] = value }
            }
            return fragment
        }
    }

    /// The epoch-seconds value for an ISO timestamp or an array of them; nil when `value` is neither.
    static func canonical(_ value: JSON) -> JSON? {
        switch value {
        case .string(let text):
            return seconds(text).map(number)
        case .array(let elements) where !elements.isEmpty:
            var converted: [JSON] = []
            converted.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let text) = element, let seconds = seconds(text) else { return nil }
                converted.append(number(seconds))
            }
            return .array(converted)
        default:
            return nil
        }
    }

    /// Whole seconds as an integer literal, others as a fraction.
    private static func number(_ seconds: Double) -> JSON {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? .int(Int64(seconds)) : .double(seconds)
    }

    /// Epoch seconds of `YYYY-MM-DDTHH:MM:SS[.fff]Z` (UTC, what `Date.toJSON` writes); nil otherwise.
    static func seconds(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes.last == UInt8(ascii: "Z") else { return nil }
        func digits(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue }),
              let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
              let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        var millis = 0
        if bytes.count == 24 {
            guard bytes[19] == UInt8(ascii: "."), let fraction = digits(20..<23) else { return nil }
            millis = fraction
        }
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(secondsFromGMT: 0)
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        guard components.isValidDate, let date = components.date else { return nil }
        return (date.timeIntervalSince1970 * 1000 + Double(millis)).rounded() / 1000
    }
}
