/// An incremental, fail-fast UTF-8 validator (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
///
/// Feed a message in pieces with `validate(_:)`; it returns false as soon as the bytes seen so far cannot be
/// the beginning of valid UTF-8, even if a code point is split across pieces. When the message ends, check
/// `isComplete` to reject a truncated final code point. ASCII runs are checked 32 bytes at a time.
public struct UTF8Validator: Sendable {
    /// Continuation bytes still expected for the current code point (0 when between code points).
    private var remaining: UInt8 = 0
    /// Allowed range of the next continuation byte (narrower than 0x80...0xBF right after some lead bytes).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF
    /// Sticky: once invalid, stays invalid until `reset()`.
    private var failed = false

    /// A validator at the start of a message.
    public init() {}

    /// True when the bytes so far end on a code point boundary (and nothing was invalid).
    public var isComplete: Bool { !failed && remaining == 0 }

    /// Starts over for a new message.
    public mutating func reset() {
        remaining = 0
        lower = 0x80
        upper = 0xBF
        failed = false
    }

    /// Validates the next piece of the message.
    /// - Returns: false as soon as the bytes seen so far (across calls) cannot be a prefix of valid UTF-8.
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if failed { return false }
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var i = 0
        var remaining = self.remaining
        var lower = self.lower
        var upper = self.upper
        defer {
            self.remaining = remaining
            self.lower = lower
            self.upper = upper
        }
        while i < count {
            if remaining == 0 {
                // ASCII fast path: 32 bytes at a time, then 8 (64-bit words: SIMD types would be far
                // slower in debug builds).
                while i + 32 <= count {
                    let p = base + i
                    let any = p.loadUnaligned(as: UInt64.self) | p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                        | p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
                        | p.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                    guard any & 0x8080_8080_8080_8080 == 0 else { break }
                    i += 32
                }
                while i + 8 <= count, base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    i += 8
                }
                guard i < count else { break }
                let b = base.load(fromByteOffset: i, as: UInt8.self)
                i += 1
                switch b {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: remaining = 1; lower = 0x80; upper = 0xBF
                case 0xE0: remaining = 2; lower = 0xA0; upper = 0xBF  // no overlongs
                case 0xE1...0xEC, 0xEE, 0xEF: remaining = 2; lower = 0x80; upper = 0xBF
                case 0xED: remaining = 2; lower = 0x80; upper = 0x9F  // no surrogates
                case 0xF0: remaining = 3; lower = 0x90; upper = 0xBF  // no overlongs
                case 0xF1...0xF3: remaining = 3; lower = 0x80; upper = 0xBF
                case 0xF4: remaining = 3; lower = 0x80; upper = 0x8F  // not above U+10FFFF
                default:
                    failed = true
                    return false
                }
            } else {
                let b = base.load(fromByteOffset: i, as: UInt8.self)
                i += 1
                guard b >= lower && b <= upper else {
                    failed = true
                    return false
                }
                remaining -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }

    /// Validates a piece of the message held in an array. See `validate(_: UnsafeRawBufferPointer)`.
    public mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { validate($0) }
    }

    /// Whether `bytes` is, on its own, complete valid UTF-8.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isComplete
    }
}
