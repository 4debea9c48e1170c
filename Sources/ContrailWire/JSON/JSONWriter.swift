import Foundation

/// Writes `JSON` values as compact UTF-8 text into a byte buffer.
///
/// The buffer is the writer's own memory, written through a pointer (no `Array` bookkeeping per
/// byte): the writer is noncopyable, so it is never shared. `bytes` copies the text out;
/// `withUnsafeBytes` lends it without a copy.
package struct JSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    package private(set) var count = 0
    let sortedKeys: Bool

    package init(sortedKeys: Bool, capacity: Int = 256) {
        self.sortedKeys = sortedKeys
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The text written so far (a copy); setting it replaces the text. O(bytes).
    package var bytes: [UInt8] {
        get { Array(UnsafeBufferPointer(start: base, count: count)) }
        set {
            count = 0
            newValue.withUnsafeBufferPointer { appendBytes($0) }
        }
    }

    /// Lends the text written so far to `body`, without a copy.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Forgets the text written so far, keeping the memory for what comes next.
    package mutating func removeAll() {
        count = 0
    }

    /// Room for `extra` more bytes; returns where they go. Amortised O(1).
    @inline(__always)
    private mutating func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if capacity &- count < extra { grow(count + extra) }
        return base + count
    }

    @inline(never)
    private mutating func grow(_ minimum: Int) {
        let newCapacity = max(capacity * 2, minimum)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Appends one byte.
    @inline(__always)
    package mutating func append(byte: UInt8) {
        reserve(1).pointee = byte
        count &+= 1
    }

    @inline(__always)
    private mutating func appendBytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, source.count > 0 else { return }
        reserve(source.count).update(from: from, count: source.count)
        count &+= source.count
    }

    package mutating func write(_ value: JSON) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number):
            if number < 0 { append(byte: UInt8(ascii: "-")) }
            writeDigits(number.magnitude)
        case .uint(let number): writeDigits(number)
        case .double(let number): writeDouble(number)
        case .string(let string): writeString(string)
        case .array(let elements):
            append(byte: UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { append(byte: UInt8(ascii: ",")) }
                first = false
                write(element)
            }
            append(byte: UInt8(ascii: "]"))
        case .object(let members):
            append(byte: UInt8(ascii: "{"))
            var first = true
            if sortedKeys {
                for key in members.keys.sorted() {
                    if !first { append(byte: UInt8(ascii: ",")) }
                    first = false
                    writeString(key)
                    append(byte: UInt8(ascii: ":"))
                    write(members[key] ?? .null)
                }
            } else {
                for (key, member) in members {
                    if !first { append(byte: UInt8(ascii: ",")) }
                    first = false
                    writeString(key)
                    append(byte: UInt8(ascii: ":"))
                    write(member)
                }
            }
            append(byte: UInt8(ascii: "}"))
        }
    }

    /// Writes `"key":`, preceded by a comma unless it is the object's first member (for writers
    /// that stream an object without building a `JSON.object` first).
    package mutating func writeKey(_ key: StaticString, first: Bool = false) {
        if !first { append(byte: UInt8(ascii: ",")) }
        append(byte: UInt8(ascii: "\""))
        append(key)
        append("\":")
    }

    /// Writes `uuid` as a JSON string in its wire form, without making a `String` first.
    package mutating func writeUUID(_ uuid: UUID) {
        let out = reserve(38)
        out[0] = UInt8(ascii: "\"")
        _ = uuid.writeWireBytes(to: UnsafeMutableBufferPointer(start: out + 1, count: 36))
        out[37] = UInt8(ascii: "\"")
        count &+= 38
    }

    @inline(__always)
    package mutating func append(_ literal: StaticString) {
        appendBytes(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func writeDigits(_ value: UInt64) {
        if value < 10 {
            append(byte: UInt8(ascii: "0") &+ UInt8(value))
            return
        }
        var digits = 1
        var scale: UInt64 = 10
        while digits < 20, value >= scale {
            digits += 1
            scale &*= 10
        }
        let out = reserve(digits)
        var remaining = value
        var index = digits
        while index > 0 {
            index -= 1
            out[index] = UInt8(ascii: "0") &+ UInt8(remaining % 10)
            remaining /= 10
        }
        count &+= digits
    }

    private mutating func writeDouble(_ value: Double) {
        // JSON has no NaN or infinity: NaN is written as null; ±infinity as ±1e999, a number too
        // large for any double, which every JSON parser (ours included) reads back as ±infinity.
        guard value.isFinite else {
            append(value.isNaN ? "null" : value < 0 ? "-1e999" : "1e999")
            return
        }
        // Whole numbers below 10^15 (coordinates, counts): the digits and ".0", exactly what
        // `description` writes for them, without formatting a string.
        if value.magnitude < 1e15, value == value.rounded(.towardZero) {
            if value == 0 {
                append(value.sign == .minus ? "-0.0" : "0.0")
            } else {
                if value < 0 { append(byte: UInt8(ascii: "-")) }
                writeDigits(UInt64(value.magnitude))
                append(".0")
            }
            return
        }
        // Swift's description is the shortest text that parses back to the same double, and for
        // finite values it is always valid JSON ("0.1", "1e+300", "-0.0", "5e-324").
        var text = value.description
        text.withUTF8 { appendBytes($0) }
    }

    package mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { writeStringBytes($0) }
    }

    /// Writes UTF-8 `text` as a JSON string: quoted, with `"`, `\\` and control characters escaped.
    private mutating func writeStringBytes(_ utf8: UnsafeBufferPointer<UInt8>) {
        append(byte: UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if runStart < index {
                appendBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            }
            runStart = index + 1
            append(byte: UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""): append(byte: UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): append(byte: UInt8(ascii: "\\"))
            case 0x0A: append(byte: UInt8(ascii: "n"))
            case 0x0D: append(byte: UInt8(ascii: "r"))
            case 0x09: append(byte: UInt8(ascii: "t"))
            case 0x08: append(byte: UInt8(ascii: "b"))
            case 0x0C: append(byte: UInt8(ascii: "f"))
            default:
                let hex: StaticString = "0123456789abcdef"
                append("u00")
                append(byte: hex.utf8Start[Int(byte >> 4)])
                append(byte: hex.utf8Start[Int(byte & 0x0F)])
            }
        }
        if runStart < utf8.count {
            appendBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        append(byte: UInt8(ascii: "\""))
    }
}
