/// A strict RFC 8259 parser over a contiguous UTF-8 buffer.
///
/// It is iterative (an explicit stack of open containers), so deep input cannot exhaust the call
/// stack; depth is bounded by `JSONLimits.maxDepth` anyway. Strings without escapes are built from
/// the byte slice in one step; integers are accumulated directly; decimals use an exact fast path
/// (Clinger) and fall back to `Double(String)` only for long mantissas or large exponents.
package struct JSONParser {
    package let base: UnsafePointer<UInt8>?
    package let count: Int
    private let limits: JSONLimits
    package var position = 0
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    package init(bytes: UnsafeRawBufferPointer, limits: JSONLimits) {
        self.base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        self.count = bytes.count
        self.limits = limits
    }

    // MARK: Document

    mutating func parseDocument() throws(JSONError) -> JSON {
        guard count <= limits.maxBytes else {
            throw JSONError(offset: limits.maxBytes, reason: "input is larger than \(limits.maxBytes) bytes")
        }
        guard let base else { throw endOfInput() }
        skipWhitespace(base)
        let value = try parseValue(base)
        skipWhitespace(base)
        if position < count { throw JSONError.unexpected(base[position], at: position) }
        return value
    }

    // MARK: Values

    private enum Container { case array, object }

    package mutating func parseValue(_ p: UnsafePointer<UInt8>) throws(JSONError) -> JSON {
        var containers: [Container] = []
        var arrays: [[JSON]] = []
        // The members of the open objects, flat; each object's dictionary is made at its `}` with the
        // capacity it needs (grown one member at a time, it was rehashed at every doubling).
        var members: [(key: String, value: JSON)] = []
        var objectStarts: [Int] = []
        var keys: [String] = []
        // At the first container, room for a message's usual nesting and members at once: grown one
        // at a time, the stacks were reallocated at each doubling, for every message.
        func reserveStacks() {
            containers.reserveCapacity(8)
            objectStarts.reserveCapacity(8)
            keys.reserveCapacity(8)
            members.reserveCapacity(16)
        }

        nextValue: while true {
            // A value starts at `position` (whitespace already skipped).
            guard position < count else { throw endOfInput() }
            var value: JSON
            let byte = p[position]
            switch byte {
            case UInt8(ascii: "{"):
                guard containers.count < limits.maxDepth else { throw tooDeep() }
                if containers.capacity == 0 { reserveStacks() }
                position += 1
                skipWhitespace(p)
                if position < count && p[position] == UInt8(ascii: "}") {
                    position += 1
                    value = .object([:])
                } else {
                    containers.append(.object)
                    objectStarts.append(members.count)
                    keys.append(try parseKey(p))
                    continue nextValue
                }
            case UInt8(ascii: "["):
                guard containers.count < limits.maxDepth else { throw tooDeep() }
                if containers.capacity == 0 { reserveStacks() }
                position += 1
                skipWhitespace(p)
                if position < count && p[position] == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    containers.append(.array)
                    arrays.append([])
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                value = .string(try parseString(p))
            case UInt8(ascii: "t"):
                try expectLiteral(p, "true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral(p, "false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral(p, "null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber(p)
            default:
                throw JSONError.unexpected(byte, at: position)
            }

            // Attach the finished value to the open containers, closing as many as end here.
            while let top = containers.last {
                skipWhitespace(p)
                guard position < count else { throw endOfInput() }
                let next = p[position]
                switch top {
                case .array:
                    arrays[arrays.count - 1].append(value)
                    if next == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace(p)
                        continue nextValue
                    } else if next == UInt8(ascii: "]") {
                        position += 1
                        containers.removeLast()
                        value = .array(arrays.removeLast())
                    } else {
                        throw JSONError.unexpected(next, at: position)
                    }
                case .object:
                    members.append((keys.removeLast(), value))
                    if next == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace(p)
                        keys.append(try parseKey(p))
                        continue nextValue
                    } else if next == UInt8(ascii: "}") {
                        position += 1
                        containers.removeLast()
                        let start = objectStarts.removeLast()
                        var object = [String: JSON](minimumCapacity: members.count - start)
                        for member in members[start...] { object[member.key] = member.value }  // a repeated key: the last wins
                        members.removeLast(members.count - start)
                        value = .object(object)
                    } else {
                        throw JSONError.unexpected(next, at: position)
                    }
                }
            }
            return value
        }
    }

    /// Parses `"key"` `:` and the whitespace after it.
    package mutating func parseKey(_ p: UnsafePointer<UInt8>) throws(JSONError) -> String {
        guard position < count else { throw endOfInput() }
        guard p[position] == UInt8(ascii: "\"") else { throw JSONError.unexpected(p[position], at: position) }
        let key = try parseString(p)
        skipWhitespace(p)
        guard position < count else { throw endOfInput() }
        guard p[position] == UInt8(ascii: ":") else { throw JSONError.unexpected(p[position], at: position) }
        position += 1
        skipWhitespace(p)
        return key
    }

    @inline(__always)
    package mutating func skipWhitespace(_ p: UnsafePointer<UInt8>) {
        while position < count {
            switch p[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func expectLiteral(_ p: UnsafePointer<UInt8>, _ literal: StaticString) throws(JSONError) {
        let bytes = literal.utf8Start
        for offset in 0..<literal.utf8CodeUnitCount {
            guard position < count else { throw endOfInput() }
            guard p[position] == bytes[offset] else { throw JSONError.unexpected(p[position], at: position) }
            position += 1
        }
    }

    // MARK: Strings

    /// Parses a string starting at the opening quote; leaves `position` after the closing quote.
    mutating func parseString(_ p: UnsafePointer<UInt8>) throws(JSONError) -> String {
        position += 1 // opening quote
        let start = position
        // Fast scan: plain bytes up to the closing quote.
        while position < count {
            let byte = p[position]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeBufferPointer(start: p + start, count: position - start), as: UTF8.self)
                position += 1
                return string
            } else if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(p, start: start)
            } else if byte < 0x20 {
                throw controlCharacter(byte)
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence(p)
            }
        }
        throw endOfInput()
    }

    /// Continues a string that has an escape at `position`; the bytes from `start` are plain.
    private mutating func parseEscapedString(_ p: UnsafePointer<UInt8>, start: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: p + start, count: position - start))
        while position < count {
            let byte = p[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                try parseEscape(p)
            } else if byte < 0x20 {
                throw controlCharacter(byte)
            } else if byte < 0x80 {
                scratch.append(byte)
                position += 1
            } else {
                let sequenceStart = position
                try skipUTF8Sequence(p)
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + sequenceStart, count: position - sequenceStart))
            }
        }
        throw endOfInput()
    }

    /// Decodes one escape at `position` (a backslash) into `scratch`.
    private mutating func parseEscape(_ p: UnsafePointer<UInt8>) throws(JSONError) {
        let escapeStart = position
        position += 1
        guard position < count else { throw endOfInput() }
        let kind = p[position]
        position += 1
        switch kind {
        case UInt8(ascii: "\""): scratch.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): scratch.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try parseHex4(p))
            if scalar >= 0xD800 && scalar < 0xDC00 {
                // A high surrogate must be followed by an escaped low surrogate.
                guard position < count else { throw endOfInput() }
                guard p[position] == UInt8(ascii: "\\") else { throw unpairedSurrogate(scalar, at: escapeStart) }
                guard position + 1 < count else { throw endOfInput() }
                guard p[position + 1] == UInt8(ascii: "u") else { throw unpairedSurrogate(scalar, at: escapeStart) }
                position += 2
                let low = UInt32(try parseHex4(p))
                guard low >= 0xDC00 && low < 0xE000 else { throw unpairedSurrogate(scalar, at: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar < 0xE000 {
                throw unpairedSurrogate(scalar, at: escapeStart)
            }
            appendUTF8(scalar)
        default:
            let shown = kind >= 0x21 && kind < 0x7F ? "'\\\(Character(Unicode.Scalar(kind)))'" : "(backslash then " + JSONError.describe(kind) + ")"
            throw JSONError(offset: escapeStart, reason: "invalid escape " + shown)
        }
    }

    private mutating func parseHex4(_ p: UnsafePointer<UInt8>) throws(JSONError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard position < count else { throw endOfInput() }
            let byte = p[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
            default: throw JSONError(offset: position, reason: "invalid hex digit " + JSONError.describe(byte) + " in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (scalar >> 6)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (scalar >> 12)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (scalar >> 18)))
            scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// Validates one multi-byte UTF-8 sequence at `position` (RFC 3629: no overlongs, no
    /// surrogates, nothing above U+10FFFF) and moves past it.
    @inline(__always)
    private mutating func skipUTF8Sequence(_ p: UnsafePointer<UInt8>) throws(JSONError) {
        let lead = p[position]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF // allowed range of the second byte
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw invalidUTF8(at: position)
        }
        for offset in 1..<length {
            guard position + offset < count else { throw endOfInput() }
            let byte = p[position + offset]
            let ok = offset == 1 ? (byte >= low && byte <= high) : (byte & 0xC0 == 0x80)
            guard ok else { throw invalidUTF8(at: position) }
        }
        position += length
    }

    // MARK: Numbers

    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Parses the number at `position` (its first byte is a digit or a minus sign).
    package mutating func parseNumber(_ p: UnsafePointer<UInt8>) throws(JSONError) -> JSON {
        let start = position
        var negative = false
        if p[position] == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        guard position < count else { throw endOfInput() }
        var mantissa: UInt64 = 0
        var overflow = false

        let first = p[position]
        guard first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") else {
            throw JSONError(offset: position, reason: "expected a digit, found " + JSONError.describe(first))
        }
        if first == UInt8(ascii: "0") {
            position += 1
            if position < count && isDigit(p[position]) {
                throw JSONError(offset: position, reason: "leading zeros are not allowed")
            }
        } else {
            accumulateDigits(p, into: &mantissa, overflow: &overflow)
        }

        var isInteger = true
        var fractionDigits = 0
        if position < count && p[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard position < count else { throw endOfInput() }
            guard isDigit(p[position]) else {
                throw JSONError(offset: position, reason: "expected a digit after '.', found " + JSONError.describe(p[position]))
            }
            let fractionStart = position
            accumulateDigits(p, into: &mantissa, overflow: &overflow)
            fractionDigits = position - fractionStart
        }

        var exponent = 0
        if position < count && (p[position] == UInt8(ascii: "e") || p[position] == UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            guard position < count else { throw endOfInput() }
            var exponentNegative = false
            if p[position] == UInt8(ascii: "+") || p[position] == UInt8(ascii: "-") {
                exponentNegative = p[position] == UInt8(ascii: "-")
                position += 1
                guard position < count else { throw endOfInput() }
            }
            guard isDigit(p[position]) else {
                throw JSONError(offset: position, reason: "expected a digit in exponent, found " + JSONError.describe(p[position]))
            }
            while position < count && isDigit(p[position]) {
                if exponent < 1_000_000 { exponent = exponent * 10 + Int(p[position] &- UInt8(ascii: "0")) }
                position += 1
            }
            if exponentNegative { exponent = -exponent }
        }

        if isInteger && !overflow {
            if negative {
                if mantissa <= UInt64(Int64.max) { return .int(-Int64(mantissa)) }
                if mantissa == UInt64(Int64.max) + 1 { return .int(.min) }
            } else {
                if mantissa <= UInt64(Int64.max) { return .int(Int64(mantissa)) }
                return .uint(mantissa)
            }
        }

        // Exact fast path: the mantissa and the power of ten are both exact doubles, so one
        // multiplication or division rounds correctly.
        if !overflow {
            let decimalExponent = exponent - fractionDigits
            if mantissa == 0 {
                return .double(negative ? -0.0 : 0.0)
            }
            if mantissa <= (1 << 53) && decimalExponent >= -22 && decimalExponent <= 22 {
                var value = Double(mantissa)
                if decimalExponent >= 0 {
                    value *= Self.powersOfTen[decimalExponent]
                } else {
                    value /= Self.powersOfTen[-decimalExponent]
                }
                return .double(negative ? -value : value)
            }
        }

        let text = String(decoding: UnsafeBufferPointer(start: p + start, count: position - start), as: UTF8.self)
        // A number too large for a double reads as ±infinity (how ±infinity is written).
        guard let value = Double(text) else {
            throw JSONError(offset: start, reason: "number out of range")
        }
        return .double(value)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inline(__always)
    private mutating func accumulateDigits(_ p: UnsafePointer<UInt8>, into mantissa: inout UInt64, overflow: inout Bool) {
        while position < count {
            let digit = p[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return }
            if !overflow {
                let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
                if o1 || o2 { overflow = true } else { mantissa = sum }
            }
            position += 1
        }
    }

    // MARK: Errors

    package func endOfInput() -> JSONError {
        JSONError(offset: count, reason: JSONError.endOfInputReason)
    }

    private func tooDeep() -> JSONError {
        JSONError(offset: position, reason: "nesting deeper than \(limits.maxDepth) levels")
    }

    private func controlCharacter(_ byte: UInt8) -> JSONError {
        JSONError(offset: position, reason: "unescaped control character " + JSONError.describe(byte) + " in string")
    }

    private func invalidUTF8(at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "invalid UTF-8 in string")
    }

    private func unpairedSurrogate(_ scalar: UInt32, at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "unpaired surrogate \\u" + String(scalar, radix: 16, uppercase: true))
    }
}
