import Foundation

/// Writes `JSON` values as compact UTF-8 text into a byte buffer.
package struct JSONWriter {
    package var bytes: [UInt8] = []
    let sortedKeys: Bool

    package init(sortedKeys: Bool, capacity: Int = 256) {
        self.sortedKeys = sortedKeys
        bytes.reserveCapacity(capacity)
    }

    package mutating func write(_ value: JSON) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number):
            if number < 0 { bytes.append(UInt8(ascii: "-")) }
            writeDigits(number.magnitude)
        case .uint(let number): writeDigits(number)
        case .double(let number): writeDouble(number)
        case .string(let string): writeString(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            if sortedKeys {
                for key in members.keys.sorted() {
                    if !first { bytes.append(UInt8(ascii: ",")) }
                    first = false
                    writeString(key)
                    bytes.append(UInt8(ascii: ":"))
                    write(members[key] ?? .null)
                }
            } else {
                for (key, member) in members {
                    if !first { bytes.append(UInt8(ascii: ",")) }
                    first = false
                    writeString(key)
                    bytes.append(UInt8(ascii: ":"))
                    write(member)
                }
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `"key":`, preceded by a comma unless it is the object's first member (for writers
    /// that stream an object without building a `JSON.object` first).
    package mutating func writeKey(_ key: StaticString, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        append(key)
        append("\":")
    }

    /// Writes `uuid` as a JSON string in its wire form, without making a `String` first.
    package mutating func writeUUID(_ uuid: UUID) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { buffer in
            buffer[0] = UInt8(ascii: "\"")
            _ = uuid.writeWireBytes(to: UnsafeMutableBufferPointer(rebasing: buffer[1..<37]))
            buffer[37] = UInt8(ascii: "\"")
            bytes.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }

    @inline(__always)
    package mutating func append(_ literal: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func writeDigits(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(value))
            return
        }
        // 20 digits hold UInt64.max.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var remaining = value
            var index = 20
            while remaining > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(remaining % 10)
                remaining /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[index..<20]))
        }
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
                if value < 0 { bytes.append(UInt8(ascii: "-")) }
                writeDigits(UInt64(value.magnitude))
                append(".0")
            }
            return
        }
        // Swift's description is the shortest text that parses back to the same double, and for
        // finite values it is always valid JSON ("0.1", "1e+300", "-0.0", "5e-324").
        var text = value.description
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    package mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                }
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
            }
            if runStart < utf8.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
