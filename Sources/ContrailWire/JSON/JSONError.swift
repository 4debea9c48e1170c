/// Why a JSON document could not be parsed, and where.
///
/// `description` reads like `unexpected '}' at byte 17`.
public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset (0-based) in the input where the problem was found. For truncated input this is
    /// the input's length.
    public var offset: Int
    /// What is wrong, e.g. `unexpected '}'`, `unexpected end of input`, `invalid UTF-8 in string`.
    public var reason: String

    /// Creates an error at `offset`.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// `"<reason> at byte <offset>"`.
    public var description: String { "\(reason) at byte \(offset)" }

    /// The reason used for input that ends too early.
    public static let endOfInputReason = "unexpected end of input"

    /// `unexpected 'x'` for printable ASCII, `unexpected byte 0xNN` otherwise.
    package static func unexpected(_ byte: UInt8, at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "unexpected " + describe(byte))
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x" + (hex.count == 1 ? "0" + hex : hex)
    }
}
